#!/usr/bin/env python3
"""PyTorch eager on one GPU: the reference tools/gpu-check.sh --bench measures hpctrain against.

The same models as hpctrain's inputs (MNIST MLP 784-1024-1024-10 and the MNIST CNN of
inputs/mnist_cnn.ini), or a wide MLP (--model wide: --width, --depth, --features), the same
batch, SGD with momentum 0.9, cross-entropy. Data: random tensors already on the GPU (the
throughput of these models does not depend on the values; hpctrain reads real batches, so
this favours PyTorch). Precision: fp32 (TF32 off unless --tf32), or bf16 autocast.
Timing: --warmup steps, then --steps steps between two CUDA synchronizations.
--gemm: instead, the dense bf16 rate of an 8192^3 matrix product (mean of 10 after 3
warm-ups), the ceiling the wide MLP is compared with.
--cases mlp:fp32,cnn:bf16,gemm,...: several in one process (PyTorch and CUDA start once), one
JSON line each, with "case" naming it. Otherwise prints one JSON line.
"""
import argparse
import json
import time

import torch
import torch.nn as nn


def build(args):
    if args.model == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                             nn.Linear(1024, 10)), (1, 28, 28), 10
    if args.model == "cnn":
        return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10)), (1, 28, 28), 10
    layers, width_in = [], args.features
    for _ in range(args.depth):
        layers += [nn.Linear(width_in, args.width), nn.ReLU()]
        width_in = args.width
    layers.append(nn.Linear(width_in, args.classes))
    return nn.Sequential(*layers), (args.features,), args.classes


def gemm_rate():
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(10):
        a @ b
    torch.cuda.synchronize()
    return 2 * n ** 3 * 10 / (time.perf_counter() - t0) / 1e12


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["mlp", "cnn", "wide"], default="mlp")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--tf32", action="store_true")
    p.add_argument("--width", type=int, default=8192)
    p.add_argument("--depth", type=int, default=8)
    p.add_argument("--features", type=int, default=1024)
    p.add_argument("--classes", type=int, default=16)
    p.add_argument("--gemm", action="store_true")
    p.add_argument("--cases", default="")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print(json.dumps({"error": "torch sees no CUDA device"}))
        return 2
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32
    cases = [c for c in args.cases.split(",") if c] or ["gemm" if args.gemm else args.model + ":" + args.precision]
    for case in cases:
        if case == "gemm":
            out = {"bf16_gemm_tflops": gemm_rate()}
        else:
            args.model, args.precision = case.split(":")
            out = train_rate(args)
        out.update(case=case, torch=torch.__version__, device=torch.cuda.get_device_name())
        print(json.dumps(out), flush=True)
    return 0


def train_rate(args):
    model, shape, classes = build(args)
    model = model.cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    batches = [(torch.randn(args.batch, *shape, device="cuda"), torch.randint(0, classes, (args.batch,), device="cuda"))
               for _ in range(8)]

    def step(i):
        x, y = batches[i % len(batches)]
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for i in range(args.warmup):
        step(i)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(args.steps):
        step(i)
    torch.cuda.synchronize()
    s = time.perf_counter() - t0
    return {"model": args.model, "batch": args.batch, "precision": args.precision,
            "samples_per_s": args.batch * args.steps / s, "step_ms": 1e3 * s / args.steps,
            "params": sum(q.numel() for q in model.parameters())}


if __name__ == "__main__":
    raise SystemExit(main())
