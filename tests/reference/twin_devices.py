"""The PyTorch twins (tools/hpctrain_torch.py) keep every tensor on the input's device.

Every call the twin of the GPU GPT deck makes in forward and backward (the MNIST CNN's: forward)
runs
under a TorchFunctionMode that raises when the tensor arguments of one call sit on different
devices, with the model and its input on the `meta` device: a tensor made on the CPU inside
forward (the causal mask once was) then meets meta tensors and fails here as it fails on CUDA.
(Plain meta tensors do not raise for masked_fill with a CPU mask on Debian's torch 1.13; the
mode does.) Usage: python3 twin_devices.py SOURCE_DIR [--negative]; --negative plants a CPU
tensor inside the attention to show the check fails.
"""
import os
import sys

import torch
from torch.overrides import TorchFunctionMode

src = sys.argv[1]
sys.path.insert(0, os.path.join(src, "tools"))
import hpctrain_torch  # noqa: E402


def devices(obj, out):
    if isinstance(obj, torch.Tensor):
        out.add(obj.device.type)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            devices(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            devices(o, out)
    return out


class OneDevice(TorchFunctionMode):
    calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        seen = devices(kwargs, devices(args, set()))
        if len(seen) > 1:
            raise RuntimeError("%s called with tensors on %s" % (getattr(func, "__name__", func), sorted(seen)))
        OneDevice.calls += 1
        return func(*args, **kwargs)


def deck_layers(name, vocab):
    s = hpctrain_torch.deck_settings(open(os.path.join(src, "inputs", name)).read())
    return s["model.layers"].replace("(65", "(%d" % vocab), hpctrain_torch.block_size_of(s)


def check(layers, shape, make_input, backward=True):
    model = hpctrain_torch.build(layers, shape).to("meta")
    x = make_input()
    with OneDevice():
        out = model(x)
        if backward:
            out.sum().backward()
    return out


if "--negative" in sys.argv:  # the old mask: made on the CPU whatever the input's device
    def old_forward(s, x):
        b, t, c = x.shape
        att = torch.zeros(b, t, t, device=x.device)
        return att.masked_fill(~torch.tril(torch.ones(t, t, dtype=torch.bool)), 0.0).sum() + x
    hpctrain_torch.Attention.forward = old_forward

layers, t = deck_layers("shakespeare_gpt_gpu.ini", 65)
out = check(layers, t, lambda: torch.randint(65, (2, t), device="meta"))
assert out.device.type == "meta" and tuple(out.shape) == (2, t, 65), out.shape
cnn = hpctrain_torch.deck_settings(open(os.path.join(src, "inputs", "mnist_cnn.ini")).read())["model.layers"]
check(cnn, (28, 28), lambda: torch.zeros(4, 28, 28, device="meta"), backward=False)  # (no meta conv backward)
print("twin_devices: GPT GPU deck and MNIST CNN on the meta device, %d calls on one device each" % OneDevice.calls)
