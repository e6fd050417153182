#!/usr/bin/python3
"""tools/bench/zipf_text.py --mb N [--seed S] [--words W] OUT

Text for tokenizer and import benchmarks that a BPE piece cache cannot make unrealistically
fast: a vocabulary of W made-up words (letters drawn with English-like frequencies, 1-14 long,
some capitalised, some with accented letters or digits), each drawn with Zipf's law (rank r with
probability proportional to 1/r^1.1), so a few words are frequent and most are rare, as in
real text; punctuation, numbers and line and paragraph breaks between them. Never repeats a
line on purpose. Writes N MiB (the last word may be cut) of UTF-8 to OUT.
"""
import argparse

import numpy as np

LETTERS = "etaoinshrdlcumwfgypbvkjxqz"
FREQ = np.array([12.7, 9.1, 8.2, 7.5, 7.0, 6.7, 6.3, 6.1, 6.0, 4.3, 4.0, 2.8, 2.8, 2.4, 2.4, 2.2, 2.0, 2.0,
                 1.9, 1.5, 1.0, 0.8, 0.15, 0.15, 0.1, 0.07])
ACCENTED = "éèàüöçñ"


def make_words(rng, count):
    lengths = np.clip(rng.poisson(4.5, count) + 1, 1, 14)
    p = FREQ / FREQ.sum()
    words = []
    for n in lengths:
        w = "".join(LETTERS[i] for i in rng.choice(len(LETTERS), n, p=p))
        roll = rng.random()
        if roll < 0.03:
            w = w[:-1] + ACCENTED[rng.integers(len(ACCENTED))]
        elif roll < 0.05:
            w = w + str(rng.integers(0, 100))
        words.append(w)
    return words


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--words", type=int, default=200000)
    ap.add_argument("out")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    words = np.array(make_words(rng, a.words), dtype=object)
    weights = 1.0 / np.arange(1, a.words + 1) ** 1.1
    weights /= weights.sum()
    target = int(a.mb * 1024 * 1024)
    seps = np.array([" "] * 40 + [", ", ". ", "; ", "! ", "? ", " - ", ".\n", ".\n\n", ": ", " \"", "\" ",
                     "'s ", " (", ") "], dtype=object)
    written = 0
    with open(a.out, "wb") as f:
        while written < target:
            n = 200000
            w = words[rng.choice(a.words, n, p=weights)]
            s = seps[rng.integers(0, len(seps), n)]
            caps = rng.random(n) < 0.08
            w = np.where(caps, np.char.capitalize(w.astype(str)).astype(object), w)
            chunk = "".join((w + s).tolist()).encode("utf-8")[: target - written]
            f.write(chunk)
            written += len(chunk)


if __name__ == "__main__":
    main()
