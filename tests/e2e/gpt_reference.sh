#!/usr/bin/env bash
# The GPT layers against PyTorch: four small decoders (nanoGPT's form: no biases, tied head; with
# biases, dropout layers off, gelu_tanh (GPT-2's gelu_new), an untied head; Llama's: RMS norms, RoPE, SwiGLU, biases on
# q, k and v only (Qwen2's), Qwen3's weighted QK-norm, an untied head; and the modern options: grouped-query attention, Llama 3's rope_scaling, QK-norm,
# relu2, over T = 70, more than one 64-query strip of fused attention) dumped by gpt_dump and
# compared by gpt_vs_torch.py (logits, loss, every gradient, 10 AdamW steps; tolerances in the script).
set -euo pipefail
dump=$1 ref=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 -c "import torch, h5py" || { echo "FAIL: needs python3-torch and python3-h5py (tools/setup.sh installs them)"; exit 1; }
nano="embedding(23, 32) position_embedding repeat(2, res(layernorm(bias=0) attention(4, bias=0, proj_std=0.01)) res(layernorm(bias=0) linear(128, bias=0) gelu linear(32, bias=0, std=0.01))) layernorm(bias=0) lm_head(23)"
biased="embedding(17, 24) position_embedding res(layernorm attention(3)) res(layernorm linear(48) gelu_tanh linear(24)) layernorm lm_head(17, tie=0)"
# Llama's pieces so far: rotary position embeddings (no position_embedding layer), RMS norms in
# place of the layer norms, a SwiGLU MLP (gate|up fused in one linear), an untied head; biases on the
# queries, keys and values and nowhere else (Qwen2's proj_bias=0); Qwen3's weighted QK-norm and heads
# of 6 columns at a width of 16 (head_dim, Qwen3 0.6B's kind).
rms="embedding(19, 16) repeat(2, res(rmsnorm attention(2, proj_bias=0, rope=10000, qk_norm=1, qk_norm_weight=1, qk_eps=5, head_dim=6)) res(rmsnorm(eps=6) linear(96, bias=0) swiglu linear(16, bias=0))) rmsnorm lm_head(19, tie=0)"
modern="embedding(19, 16) repeat(2, res(rmsnorm attention(4, kv_heads=2, bias=0, rope=500000, rope_factor=8, rope_context=32, qk_norm=1)) res(rmsnorm linear(64, bias=0) relu2 linear(16, bias=0))) rmsnorm lm_head(19, tie=0)"
status=0
for case in nano biased rms modern; do
  layers=${!case}
  echo "== $case: $layers"
  dims="17 9 4" t=9
  [ $case = nano ] && dims="23 16 3" t=16
  [ $case = rms ] && dims="19 12 3" t=12
  [ $case = modern ] && dims="19 70 2" t=70
  "$dump" "$work/$case.h5" "$layers" $dims 10 7
  /usr/bin/python3 "$ref/gpt_vs_torch.py" "$work/$case.h5" "$layers" $t || status=1
done
# Muon ([optim] name = muon) against the float64 reference of its update in gpt_vs_torch.py: the
# modern model's 10 steps with Muon on its matrices (q, k and v apart) and AdamW on the rest.
echo "== modern, Muon"
"$dump" "$work/muon.h5" "$modern" 19 70 2 10 7 muon
/usr/bin/python3 "$ref/gpt_vs_torch.py" "$work/muon.h5" "$modern" 70 muon || status=1
exit $status
