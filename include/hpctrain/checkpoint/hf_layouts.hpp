// The Hugging Face layouts --import-hf and --export-hf know (checkpoint/hf_weights.hpp), one file
// each: checkpoint/hf_llama.cpp (LlamaForCausalLM; its rotary keys in checkpoint/hf_rope.cpp),
// checkpoint/hf_gpt2.cpp (GPT2LMHeadModel). A layout turns config.json and Hugging Face's tensors
// into the [model] keys that build the same network and the tensors under hpctrain's names, and
// back. Adding one: a file with its import and export, a line in hf_weights.cpp's dispatch, a twin
// in tests/reference and a case in tests/e2e/hf_weights.sh.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hpctrain/config/config.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/io/safetensors.hpp"

namespace hpctrain::hf {

using Json = nlohmann::json;
using Tensors = std::map<std::string, LazyTensor>;  // Hugging Face's, by name (values read when asked)

// A Hugging Face model in hpctrain's terms.
struct Imported {
  ModelConfig model;                // the [model] keys that build it (arch, vocab_size, block_size set)
  std::vector<LazyTensor> tensors;  // under hpctrain's names, in its layout
};
// An hpctrain checkpoint in Hugging Face's terms.
struct Exported {
  Json config;                      // config.json
  std::vector<LazyTensor> tensors;  // under Hugging Face's names, in its layout
};

// `file`: config.json's path (errors name it); `dir`: the folder (errors about tensors name it).
Imported llama_import(const Json& config, Tensors tensors, const std::string& file, const std::string& dir);
// The class of a model_type llama_import reads (Llama's and its relatives'), "" for any other.
std::string llama_class(const std::string& model_type);
// Those model_types and classes, "llama (LlamaForCausalLM), mistral (MistralForCausalLM), ...".
std::string llama_classes();
Exported llama_export(const std::vector<LazyTensor>& ours, const ModelConfig& m, std::int64_t vocab);
Imported gpt2_import(const Json& config, Tensors tensors, const std::string& file, const std::string& dir);
Exported gpt2_export(const std::vector<LazyTensor>& ours, const ModelConfig& m, std::int64_t vocab);

// ---- Shared by the layouts (hf_weights.cpp) ----

// f(), with a key of another JSON type than the layout reads ("tie_word_embeddings": 1,
// "model_type": 7) turned from nlohmann's type_error into one line naming `file`.
template <class F>
auto typed_keys(const std::string& file, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const nlohmann::json::exception& e) {
    throw bad_input(file + ": a key of another type than Hugging Face's config.json has (" + e.what() + ")");
  }
}
// A config.json number that must be a whole number >= 0 (rope_theta 500000.0 is one); `fallback`
// >= 0 when the key may be missing or null.
std::int64_t whole(const Json& cfg, const std::string& key, const std::string& file, std::int64_t fallback = -1);
// bad_input when config.json's `key` says more layers than `tensors` could hold (before any
// per-layer work: a huge count is one line, not a hang).
void expect_layers(std::int64_t layers, std::size_t tensors, const std::string& file, const std::string& key);
// bad_input unless `key` is missing, null or `want` ("hpctrain's <model> computes <want>").
void expect_value(const Json& cfg, const std::string& key, const Json& want, const std::string& file,
                  const std::string& model);
// Takes Hugging Face's tensor `name` of `shape` out of `hf` (a leading "model." optional); one line
// naming it when it is missing or of another shape.
// The tensors below are made when their values are asked for (LazyTensor): the layouts hold shapes.
LazyTensor take(Tensors& hf, const std::string& name, const Shape& shape, const std::string& dir);
LazyTensor rows_of(std::string name, std::vector<LazyTensor> parts);  // stacked along rows
LazyTensor rows_slice(const LazyTensor& t, std::string name, std::int64_t first, std::int64_t count);
LazyTensor transposed(const LazyTensor& t, std::string name);  // a matrix [a, b] as [b, a]
LazyTensor renamed(LazyTensor t, std::string name);
// Row r of the result is row order[r] of `t` (GLM's interleaved rotary pairs: hf_llama.cpp).
LazyTensor rows_ordered(const LazyTensor& t, std::string name, std::vector<std::int64_t> order);
// GLM's rotary pairs are columns (2i, 2i + 1) of each head's first `rotated` (rotate_half_llm),
// hpctrain's (i, i + rotated / 2): the source row of each row of a q or k projection of `heads`
// heads of `width` rows (to_hf false: hpctrain's order from GLM's rows; true: the way back).
std::vector<std::int64_t> glm_rows(std::int64_t heads, std::int64_t width, std::int64_t rotated, bool to_hf);

}  // namespace hpctrain::hf
