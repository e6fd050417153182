#!/usr/bin/python3
"""tests/reference/nfc_cases.py OUT: lines of text for Unicode's NFC (tests/e2e/tokenizer.sh runs them
through Qwen2.5's tokenizer.json and compares with JavaScript's String.normalize('NFC') and
transformers.js). Only characters assigned in Python's Unicode (14.0, as src/data/nfc_tables.inc):
  - every character with a canonical decomposition, as it is, 16 to a line, and fully decomposed
    (NFD), 16 to a line: NFC composes the primary composites back, leaves the singletons' targets
    and the composition exclusions decomposed
  - 2,000 random clusters, 8 to a line: a base (an ASCII or Latin-1 letter, a decomposable letter,
    a Hangul jamo or syllable, a Devanagari or Hebrew letter) followed by 1 to 4 combining marks
    or jamo in random order (canonical ordering, blocked and unblocked composition)
  - Hangul: 500 random syllables, and their jamo with the T jamo apart and together
Deterministic (seed 15).
"""
import random
import sys
import unicodedata as u

rng = random.Random(15)
assigned = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF and u.category(chr(cp)) != "Cn"]
decomposable = [chr(cp) for cp in assigned
                if u.decomposition(chr(cp)) and not u.decomposition(chr(cp)).startswith("<")]
marks = [chr(cp) for cp in assigned if u.combining(chr(cp))]
jamo = [chr(cp) for cp in list(range(0x1161, 0x1176)) + list(range(0x11A8, 0x11C3))]
bases = (list("aeiouAEIOUnNcCsSzZ") + [chr(cp) for cp in range(0xC0, 0x100)] + decomposable[:400] +
         [chr(cp) for cp in range(0x1100, 0x1113)] + [chr(rng.randrange(0xAC00, 0xD7A4)) for _ in range(50)] +
         [chr(cp) for cp in range(0x915, 0x93A)] + [chr(cp) for cp in range(0x5D0, 0x5EB)])
lines = []
for i in range(0, len(decomposable), 16):
    chunk = "".join(decomposable[i:i + 16])
    lines += [chunk, u.normalize("NFD", chunk)]
clusters = []
for _ in range(2000):
    pool = marks if rng.random() < 0.8 else jamo
    clusters.append(rng.choice(bases) + "".join(rng.choice(pool) for _ in range(rng.randint(1, 4))))
lines += [" ".join(clusters[i:i + 8]) for i in range(0, len(clusters), 8)]
syllables = "".join(chr(rng.randrange(0xAC00, 0xD7A4)) for _ in range(500))
lines += [syllables, u.normalize("NFD", syllables)]
with open(sys.argv[1], "w", encoding="utf-8") as f:
    f.write("\n".join(line for line in lines if "\n" not in line and "\r" not in line) + "\n")
