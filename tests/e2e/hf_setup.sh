#!/usr/bin/env bash
# Sourced by tests/e2e/hf_weights.sh and hf_families.sh (MPIRUN TRAINER SRC): the tiny
# LlamaForCausalLM folder tests/reference/hf_llama.py writes ($tmp/hf, with a tokenizer_config.json
# and a generation_config.json), the byte-tokenized text ($tmp/tok), the float64 reference's server
# (ref_loss), the folder imported ($tmp/imp.h5; $out its output, $tmp/deck.ini its deck, $ours
# --eval-only's loss, $theirs the reference's) and the helpers imported_as, apart, exported_as and bad.
set -u
source "$3/tests/e2e/lib.sh"
e2e_start "$1" "$2" "$3"
py=/usr/bin/python3
ref=$src/tests/reference/hf_llama.py
$py -c "import torch, h5py" || { echo "FAIL: needs python3-torch and python3-h5py (tools/setup.sh installs them)"; exit 1; }
cp tests/data/text/shakespeare-220k.txt "$tmp/text.txt"  # (a fixed text: the docs change)
"$(dirname "$trainer")/hpctrain-data" import-text --input "$tmp/text.txt" --tokenizer byte --out "$tmp/tok" \
  --val-fraction 0.1 >/dev/null
$py "$ref" make "$tmp/hf"
# The reference's losses from one process (torch imported once, not for each of the ~17 losses): a
# request line on fd 7, its answer on fd 8; EOF (the script's end) stops it.
mkfifo "$tmp/ref.in" "$tmp/ref.out"
$py "$ref" serve <"$tmp/ref.in" >"$tmp/ref.out" &
exec 7>"$tmp/ref.in" 8<"$tmp/ref.out"
ref_loss() {  # DIR DATA T: the float64 reference's loss
  local line=""
  echo "loss $*" >&7 && read -r line <&8
  echo "$line"
}
# The files that carry the special tokens, the chat template and the sampling defaults.
printf '{"bos_token": "<|begin_of_text|>", "chat_template": "{%% for m in messages %%}{{ m.content }}{%% endfor %%}"}\n' \
  >"$tmp/hf/tokenizer_config.json"
printf '{"bos_token_id": 1, "eos_token_id": [2, 3], "temperature": 0.6}\n' >"$tmp/hf/generation_config.json"
out=$("$trainer" --import-hf "$tmp/hf" --out "$tmp/imp.h5" 2>&1)
deck_of() {  # IMPORT_OUTPUT FILE: the import's [model] keys, the byte data, T = 64 (or $T)
  {
    sed -n '/^\[model\]/,$p' <<<"$1" | grep -v "^block_size"
    printf 'block_size = %s\n[data]\npath = %s\n[run]\nout_dir = %s\n[train]\nglobal_batch = 4\n' "${T:-64}" "$tmp/tok" "$tmp/run"
  } >"$2"
}
deck_of "$out" "$tmp/deck.ini"
loss_of() { awk '{for (i = 1; i < NF; i++) if ($i == "loss") print $(i + 1)}' <<<"$1"; }
close() { $py -c "import sys; sys.exit(abs(float('${1:-0}') - float('${2:-9}')) > 1e-5 * float('${2:-9}'))"; }
ev=$("$trainer" "$tmp/deck.ini" --eval-only --set checkpoint.resume="$tmp/imp.h5" 2>&1 | grep "^eval-only")
ours=$(loss_of "$ev") theirs=$(ref_loss "$tmp/hf" "$tmp/tok" 64)
imported_as() {  # NAME LINE...: $tmp/NAME imported (NAME.h5, NAME.ini) with each [model] LINE (!LINE: without
  local name=$1 out ev theirs line  # it), the reference's loss
  shift
  out=$("$trainer" --import-hf "$tmp/$name" --out "$tmp/$name.h5" 2>&1)
  deck_of "$out" "$tmp/$name.ini"
  for line in "$@"; do
    if [ "${line#!}" != "$line" ]; then
      ! grep -qx "${line#!}" <<<"$out" || { echo "     '${line#!}' in the import's deck"; return 1; }
    else
      grep -qx "$line" <<<"$out" || { echo "     no '$line' in the import's deck"; return 1; }
    fi
  done
  ev=$("$trainer" "$tmp/$name.ini" --eval-only --set checkpoint.resume="$tmp/$name.h5" 2>&1 | grep "^eval-only")
  theirs=$(ref_loss "$tmp/$name" "$tmp/tok" "${T:-64}")
  echo "$theirs" >"$tmp/$name.ref"  # (for apart)
  close "$(loss_of "$ev")" "$theirs" && echo "     --eval-only's loss $(loss_of "$ev") = the reference's $theirs"
}
apart() {  # LOSS NAME TOLERANCE: LOSS at least TOLERANCE from the reference's loss imported_as kept for NAME
  $py -c "import sys; sys.exit(abs(float('$1') - float('$(cat "$tmp/$2.ref" 2>/dev/null)')) < $3)"
}
exported_as() {  # NAME MODEL_TYPE: NAME.h5 exported with that model_type and the folder's tensors bit for bit
  "$trainer" "$tmp/$1.ini" --export-hf "$tmp/$1_out" --set checkpoint.resume="$tmp/$1.h5" >/dev/null 2>&1
  grep -q "\"model_type\": \"$2\"" "$tmp/$1_out/config.json" && $py "$ref" same "$tmp/$1" "$tmp/$1_out"
}
bad() {  # kind pattern [reference folder]: that folder spoiled by the reference is refused
  rm -rf "$tmp/bad" "$tmp/bad.h5" && cp -r "$tmp/${4:-hf}" "$tmp/bad" && $py "${3:-$ref}" break "$tmp/bad" "$1"
  local err rc
  err=$("$trainer" --import-hf "$tmp/bad" --out "$tmp/bad.h5" 2>&1)
  rc=$?
  err=$(without_runtime_noise <<<"$err")
  [ $rc = 2 ] && [ "$(wc -l <<<"$err")" = 1 ] && grep -q "$2" <<<"$err" && [ ! -e "$tmp/bad.h5" ] && echo "     $err" | cut -c1-150
}
