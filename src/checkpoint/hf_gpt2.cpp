// Hugging Face's GPT2LMHeadModel layout (checkpoint/hf_layouts.hpp). Its Conv1D weights are
// [in, out] (x W + b), hpctrain's [out, in]: c_attn, c_proj, c_fc and mlp.c_proj are transposed
// both ways; c_attn's q|k|v columns are the rows of hpctrain's fused qkv in that order. wte and
// wpe are the token and position embeddings (wpe [n_positions, C]: the deck's block_size is
// n_positions), ln_1, ln_2 and ln_f the layer norms (eps 1e-5), and the head is wte unless
// tie_word_embeddings is false. Published files name every tensor with a "transformer." prefix or
// without; the attention-mask buffers some carry (h.N.attn.bias, h.N.attn.masked_bias) are skipped.
#include <algorithm>

#include "hpctrain/checkpoint/hf_layouts.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain::hf {

namespace {
const char* const kGpt2 = "GPT-2";

// `c`'s [model] keys, arch = gpt (block_size: n_positions).
ModelConfig gpt2_model(const Json& c, const std::string& file) {
  ModelConfig m;
  m.arch = Arch::gpt;
  m.n_layer = whole(c, "n_layer", file);
  m.n_head = whole(c, "n_head", file);
  m.n_embd = whole(c, "n_embd", file);
  m.vocab_size = whole(c, "vocab_size", file);
  m.block_size = whole(c, "n_positions", file, whole(c, "n_ctx", file, 1024));
  m.tie_embeddings = c.value("tie_word_embeddings", true);
  if (m.n_head < 1 || m.n_embd % m.n_head != 0)
    throw bad_input(file + ": n_embd " + std::to_string(m.n_embd) + " is not a multiple of n_head " +
                    std::to_string(m.n_head));
  const std::string act = c.value("activation_function", "gelu_new");
  if (act != "gelu_new" && act != "gelu_pytorch_tanh" && act != "gelu")
    throw bad_input(file + ": \"activation_function\" = \"" + act + "\": hpctrain's GPT-2 computes gelu_new " +
                    "(gelu_pytorch_tanh: the same) or gelu");
  m.activation = act != "gelu" ? GptActivation::gelu_tanh : GptActivation::gelu;
  expect_value(c, "n_inner", 4 * m.n_embd, file, kGpt2);
  expect_value(c, "layer_norm_epsilon", 1e-5, file, kGpt2);
  expect_value(c, "scale_attn_weights", true, file, kGpt2);
  expect_value(c, "scale_attn_by_inverse_layer_idx", false, file, kGpt2);
  return m;
}

// One tensor of each side: Hugging Face's name (without "transformer."), hpctrain's, its shape
// in Hugging Face's layout, and whether the layouts are each other's transpose (Conv1D).
struct Pair {
  std::string hf, ours;
  Shape shape;
  bool conv1d = false;
};
std::vector<Pair> pairs(std::int64_t layers, std::int64_t c, std::int64_t vocab, std::int64_t positions, bool tied) {
  std::vector<Pair> out{{"wte.weight", "tok_emb.weight", {vocab, c}}, {"wpe.weight", "pos_emb.weight", {positions, c}}};
  for (std::int64_t i = 0; i < layers; ++i) {
    const std::string h = "h." + std::to_string(i) + ".";
    for (const char* ln : {"ln_1", "ln_2"})
      for (const char* p : {".weight", ".bias"}) out.push_back({h + ln + p, h + ln + p, {c}});
    out.push_back({h + "attn.c_attn.weight", h + "attn.qkv.weight", {c, 3 * c}, true});
    out.push_back({h + "attn.c_attn.bias", h + "attn.qkv.bias", {3 * c}});
    out.push_back({h + "attn.c_proj.weight", h + "attn.proj.weight", {c, c}, true});
    out.push_back({h + "attn.c_proj.bias", h + "attn.proj.bias", {c}});
    out.push_back({h + "mlp.c_fc.weight", h + "mlp.fc.weight", {c, 4 * c}, true});
    out.push_back({h + "mlp.c_fc.bias", h + "mlp.fc.bias", {4 * c}});
    out.push_back({h + "mlp.c_proj.weight", h + "mlp.proj.weight", {4 * c, c}, true});
    out.push_back({h + "mlp.c_proj.bias", h + "mlp.proj.bias", {c}});
  }
  out.push_back({"ln_f.weight", "ln_f.weight", {c}});
  out.push_back({"ln_f.bias", "ln_f.bias", {c}});
  if (!tied) out.push_back({"lm_head.weight", "lm_head.weight", {vocab, c}});
  return out;
}

bool buffer(const std::string& name) {  // the causal mask's buffers of older files
  auto ends = [&](const std::string& s) { return name.size() >= s.size() && name.rfind(s) == name.size() - s.size(); };
  return ends(".attn.bias") || ends(".attn.masked_bias");
}
Imported import_gpt2_layout(const Json& c, Tensors given, const std::string& file, const std::string& dir) {
  const ModelConfig m = gpt2_model(c, file);
  expect_layers(m.n_layer, given.size(), file, "n_layer");
  Tensors hf;
  for (auto& [name, t] : given)  // "transformer.h.0..." and "h.0..." alike
    hf.emplace(name.rfind("transformer.", 0) == 0 ? name.substr(12) : name, std::move(t));
  Imported out{m, {}};
  for (const Pair& p : pairs(m.n_layer, m.n_embd, m.vocab_size, m.block_size, m.tie_embeddings)) {
    LazyTensor t = take(hf, p.hf, p.shape, dir);
    out.tensors.push_back(p.conv1d ? transposed(t, p.ours) : renamed(std::move(t), p.ours));
  }
  if (m.tie_embeddings) hf.erase("lm_head.weight");  // (some files carry the tied copy)
  for (const auto& [name, t] : hf)
    if (!buffer(name))
      throw bad_input(dir + ": tensor " + name + " " + shape_string(t.shape) + " is not a parameter of " +
                      "GPT2LMHeadModel with this config.json");
  return out;
}

}  // namespace

Imported gpt2_import(const Json& c, Tensors given, const std::string& file, const std::string& dir) {
  return typed_keys(file, [&] { return import_gpt2_layout(c, std::move(given), file, dir); });
}

Exported gpt2_export(const std::vector<LazyTensor>& ours, const ModelConfig& m, std::int64_t vocab) {
  if (!m.bias)
    throw bad_input(
        "--export-hf: [model] bias = false, but GPT2LMHeadModel has biases in every linear layer and "
        "layer norm");
  Exported out;
  const double drop = m.dropout;
  out.config = {{"architectures", {"GPT2LMHeadModel"}},
                {"model_type", "gpt2"},
                {"n_layer", m.n_layer},
                {"n_head", m.n_head},
                {"n_embd", m.n_embd},
                {"n_positions", m.block_size},
                {"n_ctx", m.block_size},
                {"n_inner", nullptr},
                {"vocab_size", vocab},
                {"activation_function", m.activation == GptActivation::gelu_tanh ? "gelu_new" : "gelu"},
                {"layer_norm_epsilon", 1e-5},
                {"resid_pdrop", drop},
                {"embd_pdrop", drop},
                {"attn_pdrop", drop},
                {"scale_attn_weights", true},
                {"tie_word_embeddings", m.tie_embeddings},
                {"torch_dtype", "float32"}};
  std::map<std::string, const LazyTensor*> by_name;
  for (const LazyTensor& t : ours) by_name[t.name] = &t;
  for (const Pair& p : pairs(m.n_layer, m.n_embd, vocab, m.block_size, m.tie_embeddings)) {
    const auto it = by_name.find(p.ours);
    if (it == by_name.end()) throw bad_input("--export-hf: the checkpoint has no tensor " + p.ours);
    const LazyTensor& t = *it->second;
    out.tensors.push_back(p.conv1d ? transposed(t, p.hf) : renamed(t, p.hf));
    by_name.erase(it);
  }
  if (!by_name.empty())
    throw bad_input("--export-hf: the checkpoint's tensor " + by_name.begin()->first + " has no place in " +
                    "GPT2LMHeadModel");
  return out;
}

}  // namespace hpctrain::hf
