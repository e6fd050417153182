#!/usr/bin/python3
"""PyTorch eager training speed of the GPT an hpctrain deck describes (the same modules, built
from the deck's [model] layers by tools/hpctrain_torch.py), on random token windows.

usage: torch_gpt.py DECK.ini [--device cuda|cpu] [--steps N] [--warmup N] [--batch B] [--threads T]
Prints one JSON line: tokens_per_s (timed steps), step_ms, device, parameters. AdamW, clip 1.0;
dropout layers are left out (PyTorch's would cost a little more), the rest as hpctrain computes.
"""
import argparse, configparser, json, os, sys, time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import hpctrain_torch  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("deck")
p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
p.add_argument("--steps", type=int, default=50)
p.add_argument("--warmup", type=int, default=10)
p.add_argument("--batch", type=int, default=0, help="default: the deck's global_batch")
p.add_argument("--threads", type=int, default=1)
a = p.parse_args()
torch.set_num_threads(a.threads)
ini = configparser.ConfigParser(inline_comment_prefixes=("#",))
ini.read(a.deck)
layers, t = ini["model"]["layers"], int(ini["model"].get("block_size") or ini["data"]["block_size"])
batch = a.batch or int(ini["train"]["global_batch"])
described = hpctrain_torch.describe_layers(layers, t)
model = hpctrain_torch.build_from_description(described).to(a.device)
vocab = [l["positional"][0] for l in described["layers"] if l["type"] == "embedding"][0]
for q in model.parameters():
    torch.nn.init.normal_(q, 0.0, 0.02)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
x = torch.randint(vocab, (batch, t), device=a.device)
y = torch.randint(vocab, (batch, t), device=a.device)
sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)
for step in range(a.warmup + a.steps):
    if step == a.warmup:
        sync()
        t0 = time.perf_counter()
    loss = torch.nn.functional.cross_entropy(model(x).view(-1, vocab), y.view(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
sync()
dt = time.perf_counter() - t0
print(json.dumps({"tokens_per_s": batch * t * a.steps / dt, "step_ms": 1e3 * dt / a.steps, "device": a.device,
                  "parameters": sum(q.numel() for q in model.parameters())}))
