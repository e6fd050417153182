#!/usr/bin/python3
"""tests/reference/llmc_write_datafile.py OUT MODEL FIRST COUNT [--bad KIND]

Writes an llm.c token shard as llm.c's dev/data/data_common.py write_datafile does (a header of
256 int32: magic, version, token count; then the tokens as uint16 for gpt-2 or uint32 for
llama-3). The tokens are COUNT ids of a fixed sequence starting at position FIRST (so shards
written with consecutive ranges are one stream): id(i) = (i * 7919 + i // 13) % VOCAB.
--bad magic|version|truncated|id writes one broken shard for the refusal tests.
"""
import sys

import numpy as np

HEADERS_INFO = {  # as in llm.c's data_common.py
    "gpt-2": {"magic": 20240520, "version": 1, "token_dtype": np.uint16, "vocab": 50257},
    "llama-3": {"magic": 20240801, "version": 7, "token_dtype": np.uint32, "vocab": 128256},
}


def write_datafile(filename, toks, model_desc="gpt-2", bad=None):
    assert len(toks) < 2**31, "token count too large"
    info = HEADERS_INFO[model_desc]
    header = np.zeros(256, dtype=np.int32)
    header[0] = info["magic"] + (1 if bad == "magic" else 0)
    header[1] = info["version"] + (1 if bad == "version" else 0)
    header[2] = len(toks)
    toks_np = np.array(toks, dtype=info["token_dtype"])  # (a list as llm.c passes, or an array)
    if bad == "id":
        toks_np[5] = info["vocab"]  # one past the vocabulary
    with open(filename, "wb") as f:
        f.write(header.tobytes())
        f.write(toks_np.tobytes()[: -2 if bad == "truncated" else None])


def main():
    out, model, first, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    bad = sys.argv[6] if len(sys.argv) > 6 and sys.argv[5] == "--bad" else None
    vocab = HEADERS_INFO[model]["vocab"]
    i = np.arange(first, first + count, dtype=np.int64)
    write_datafile(out, (i * 7919 + i // 13) % vocab, model, bad)


if __name__ == "__main__":
    main()
