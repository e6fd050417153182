#!/usr/bin/env python3
"""tests/fuzz/tokenizer_seeds.py OUT_DIR: the byte-level seeds of fuzz_tokenizer (tests/fuzz/fuzz_tokenizer.cpp).

A byte-level vocabulary must hold a token for each of the 256 bytes (GPT-2's bytes_to_unicode
letters) before hpctrain loads it, so each seed has all 256, four merges and <|endoftext|>:
GPT-2's encoder.json + vocab.bpe (first byte 1, the two split at a NUL), and tokenizer.json as
GPT-2 (0), Llama 3 (2: a Split pre-tokenizer with its pattern, then ByteLevel) and Qwen2 (4: the
same with the NFC normalizer) write it. (The seeds before 2026-12-07 held 94 of the bytes: every
one was refused before the encoder ran.)"""
import json
import os
import sys


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


letters = [bytes_to_unicode()[b] for b in range(256)]
merges = [("h", "e"), ("l", "l"), ("ll", "o"), ("Ġ", "w")]
vocab = {t: i for i, t in enumerate(letters)}
for a, b in merges:
    vocab[a + b] = len(vocab)
eot = len(vocab)
split = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
         "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")


def hf(pre_tokenizer, normalizer, merge_list):
    return json.dumps({"version": "1.0",
                       "added_tokens": [{"id": eot, "content": "<|endoftext|>", "special": True}],
                       "normalizer": normalizer, "pre_tokenizer": pre_tokenizer,
                       "model": {"type": "BPE", "vocab": vocab, "merges": merge_list},
                       "decoder": {"type": "ByteLevel"}}, ensure_ascii=False).encode()


byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
llama3_pre = {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": split}, "behavior": "Isolated", "invert": False},
    dict(byte_level, use_regex=False)]}
seeds = {
    "hf_bytelevel.bin": b"\0" + hf(byte_level, None, [a + " " + b for a, b in merges]),
    "hf_llama3_style.bin": b"\2" + hf(llama3_pre, None, [[a, b] for a, b in merges]),
    "hf_qwen2_style.bin": b"\4" + hf(llama3_pre, {"type": "NFC"}, [[a, b] for a, b in merges]),
    "gpt2_files.bin": b"\1" + json.dumps(dict(vocab, **{"<|endoftext|>": eot}), ensure_ascii=False).encode() + b"\0" +
                      ("#version: 0.2\n" + "".join(a + " " + b + "\n" for a, b in merges)).encode(),
}
for name, data in seeds.items():
    with open(os.path.join(sys.argv[1], name), "wb") as f:
        f.write(data)
