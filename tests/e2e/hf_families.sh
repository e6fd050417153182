#!/usr/bin/env bash
# tests/e2e/hf_families.sh MPIRUN TRAINER SRC: the Llama family's other Hugging Face classes in and
# out, each a variant of hf_weights.sh's tiny Llama folder written by tests/reference/hf_llama.py:
# --import-hf gives each class's [model] keys and --eval-only the float64 reference's loss (1e-5),
# a negative control for each key that changes the computation gives another loss, and --export-hf
# writes the class back with the folder's tensors bit for bit; transformers 5's config.json layout
# gives the same keys as transformers 4's. (hf_weights.sh: the Llama folder itself, bad folders,
# shards, tokenizers, fine-tuning and GPT-2.)
source "$(dirname "${BASH_SOURCE[0]}")/hf_setup.sh" "$@"
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

# Bad folders of these classes: one line each naming the key or tensor, exit 2, no checkpoint.
check "a Phi-3 whose partial_rotary_factor rotates 3 columns" bad partial_odd '"partial_rotary_factor" = 0.375 rotates 3 columns of heads of 8' "$ref" phi
check "a longrope with 2 short factors for 3 rotated pairs" bad longrope_count 'short_factor and long_factor hold 2 and 3 factors for 3 rotated pairs' "$ref" phi4
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
exec 7>&- 8<&-  # (the reference's server reads EOF and ends)
wait
finish
