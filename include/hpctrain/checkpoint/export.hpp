// trainer --export FILE.safetensors: a checkpoint's weights in the safetensors format.
#pragma once

#include <string>
#include <vector>

#include "hpctrain/config/config.hpp"
#include "hpctrain/io/checkpoint_file.hpp"
#include "hpctrain/io/safetensors.hpp"
#include "hpctrain/runtime/runtime.hpp"

namespace hpctrain {

// Every tensor under model/ (parameters and buffers), by its name ("h.0.attn.qkv.weight"; a format-1 file's positional
// path with dots, "05_res.01_conv.weight"), in the file's order; with the deck's `cfg`, the padding rows of [model]
// vocab_multiple are left out of the embedding and lm_head tables ([V, C] as PyTorch and Hugging Face hold them).
// Each tensor's values are read from `file` when asked (it must outlive them): an export holds one at a time.
std::vector<LazyTensor> checkpoint_tensors(const CheckpointFile& file, const Config* cfg = nullptr);

// [checkpoint] export_dtype as the element type of the files (f32, bf16, f16), and its name in
// Hugging Face's config.json (torch_dtype: "float32", "bfloat16", "float16").
DType export_dtype(const Config& cfg);
const char* torch_dtype_name(DType stored);

// Collective; rank 0 works: writes the checkpoint [checkpoint] resume selects to `out` with the
// values in [checkpoint] export_dtype and the metadata format = pt, hpctrain_deck (the configuration it was trained
// with), hpctrain_step, hpctrain_software (and the tokenizer and vocabulary of a language model). Returns the line rank
// 0 logs. bad_input when there is no checkpoint or `out` cannot be written.
std::string export_weights(const Config& cfg, Runtime& rt, const std::string& out);

}  // namespace hpctrain
