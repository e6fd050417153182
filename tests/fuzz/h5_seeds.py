#!/usr/bin/env python3
"""Writes the seed recipes of fuzz_h5 (tests/fuzz/fuzz_h5.cpp says the recipe format) into
tests/fuzz/corpus/h5: each makes a file the trainer accepts (a classification shard, a regression
shard with float16 samples, a token shard, a checkpoint of a small MLP), for the fuzzer to start
from.  python3 tests/fuzz/h5_seeds.py"""
import os
import struct

ATTRS = [
    ["format", "version", "num_classes", "scale", "offset", "mean", "std", "target_names", "transform"],
    ["format", "version", "tokenizer", "vocab_size", "vocabulary"],
    ["format", "format_version", "step", "epoch", "epoch_step", "samples", "global_batch", "seed", "world_size",
     "data_parallel", "model_parallel", "tensor_parallel", "last_loss", "train_seconds", "optimizer",
     "optimizer_steps", "loss_scale", "loss_scale_good_steps", "skipped_steps", "ini", "ini_file", "model_summary",
     "written_at", "software", "hdf5_version", "mpi_version", "blas", "tokenizer", "vocabulary"],
]
DATASETS = [
    ["samples", "labels"],
    ["tokens", "tokenizer/vocab.json", "tokenizer/merges.txt"],
    ["model/dense.0.weight", "model/dense.0.bias", "model/dense.1.weight", "optimizer/momentum/dense.0.weight",
     "state/interval_sums", "tokenizer_files/vocab.json", "model/0/weight"],
]
STRINGS = ["hpctrain-dataset", "hpctrain-tokens", "hpctrain-checkpoint", "byte", "char", "gpt2", "bpe", "log1p",
           "sgd", "adam", ""]
TYPES = {"u8": (0, "B"), "u16": (1, "H"), "i16": (2, "h"), "i32": (3, "i"), "i64": (4, "q"), "f16": (5, "e"),
         "f32": (6, "f"), "f64": (7, "d")}


def text(s):
    b = s.encode()
    return bytes([len(b)]) + b


def name(mode, n, known):
    return bytes([known.index(n)]) if n in known else bytes([255]) + text(n)


def string_attr(mode, n, v):
    value = bytes([STRINGS.index(v)]) if v in STRINGS else bytes([255]) + text(v)
    return bytes([0]) + name(mode, n, ATTRS[mode]) + value


def int_attr(mode, n, v):
    return bytes([1]) + name(mode, n, ATTRS[mode]) + struct.pack("<q", v)


def float_attr(mode, n, values):
    count = 0 if len(values) == 1 else len(values)
    return bytes([2]) + name(mode, n, ATTRS[mode]) + bytes([count]) + struct.pack("<%dd" % len(values), *values)


def dataset(mode, n, kind, dims, values, chunked=False):
    code, fmt = TYPES[kind]
    return (bytes([3]) + name(mode, n, DATASETS[mode]) + bytes([code, len(dims)]) + bytes(dims) +
            bytes([1 if chunked else 0]) + struct.pack("<%d%s" % (len(values), fmt), *values))


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "h5")
    os.makedirs(out, exist_ok=True)
    seeds = {
        "shard_classes": bytes([0, 0]) + int_attr(0, "num_classes", 4) + float_attr(0, "scale", [1 / 255]) +
        float_attr(0, "offset", [0.0]) + dataset(0, "samples", "u8", [4, 2, 2], list(range(0, 160, 10)), True) +
        dataset(0, "labels", "i32", [4], [0, 1, 2, 3]),
        "shard_targets": bytes([0, 2]) + int_attr(0, "num_classes", 0) + float_attr(0, "mean", [0.5, 0.25]) +
        float_attr(0, "std", [2.0, 4.0]) + string_attr(0, "target_names", "a,b") +
        dataset(0, "samples", "f16", [3, 2, 2, 2], [0.25 * i for i in range(24)]) +
        dataset(0, "labels", "f32", [3, 2], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]),
        "tokens": bytes([1, 0]) + string_attr(1, "tokenizer", "byte") + int_attr(1, "vocab_size", 256) +
        dataset(1, "tokens", "u16", [4], [72, 105, 33, 10]),
        "checkpoint": bytes([2, 1]) + string_attr(2, "format", "hpctrain-checkpoint") +
        int_attr(2, "format_version", 2) + b"".join(int_attr(2, n, v) for n, v in [
            ("step", 3), ("epoch", 1), ("epoch_step", 3), ("samples", 12), ("global_batch", 4), ("seed", 42),
            ("world_size", 1), ("data_parallel", 1), ("model_parallel", 1), ("optimizer_steps", 3)]) +
        float_attr(2, "last_loss", [0.7]) + float_attr(2, "train_seconds", [0.1]) +
        b"".join(string_attr(2, n, v) for n, v in [
            ("optimizer", "sgd"), ("ini", "[model]\nlayers = flatten dense(4)\n"), ("ini_file", "x.ini"),
            ("model_summary", "dense.0 [4]"), ("written_at", "2026-12-05T12:00:00Z"), ("software", "hpctrain")]) +
        dataset(2, "model/dense.0.weight", "f32", [4, 3], [0.01 * i for i in range(12)], True) +
        dataset(2, "model/dense.0.bias", "f32", [4], [0.0, 0.1, 0.2, 0.3]) +
        dataset(2, "state/interval_sums", "f64", [1, 3], [1.0, 2.0, 3.0]),
    }
    for n, recipe in seeds.items():
        with open(os.path.join(out, n), "wb") as f:
            f.write(recipe)


if __name__ == "__main__":
    main()
