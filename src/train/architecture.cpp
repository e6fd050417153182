// [model] arch resolved against the dataset (train/trainer.hpp with_architecture).
#include <cmath>

#include "hpctrain/config/rope_scaling.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/model/arch.hpp"
#include "hpctrain/train/trainer.hpp"

namespace hpctrain {

namespace {
// [model] vocab_size = `rows` against the dataset. More rows than tokens is a model's choice
// (Qwen2's 151,936 for 151,665 tokens): the rows no token uses are kept, and --generate never draws
// them. Fewer are fine while no split holds an id without a row (Gemma 3 1B's 262,144 rows for its
// tokenizer's 262,145 ids, the last the vision models' <image_soft_token>): each split's recorded
// largest id, which its value checks then hold the shards to; without shards (--generate's
// checkpoint vocabulary) the prompt is checked as it is encoded.
void check_vocab_rows(std::int64_t rows, const DatasetIndex& index) {
  const SplitIndex& train = index.train;
  if (rows == 0 || rows >= train.num_classes) return;
  const std::string head = "[model] vocab_size = " + std::to_string(rows) + ", but the dataset's vocabulary has " +
                           std::to_string(train.num_classes) + " tokens";
  for (const SplitIndex* s : {&train, index.val ? &*index.val : nullptr, index.test ? &*index.test : nullptr}) {
    if (!s || s->shards.empty()) continue;
    if (s->max_id < 0)
      throw bad_input(head + " and " + index.root + "/" + s->name + "'s shards record no largest id (max_token_id; " +
                      "import-text writes it), so each token needs a row (vocab_size = auto takes the dataset's)");
    if (s->max_id >= rows)
      throw bad_input(head + " and " + index.root + "/" + s->name + " holds id " + std::to_string(s->max_id) +
                      ", which needs a row (vocab_size >= " + std::to_string(s->max_id + 1) + ")");
  }
}
}  // namespace

Config with_architecture(const Config& cfg, const DatasetIndex& index) {
  if (cfg.model.arch == Arch::layers) return cfg;
  const ModelConfig& m = cfg.model;
  const SplitIndex& train = index.train;
  if (!train.tokens)
    throw bad_input(std::string("[model] arch = ") + name_of(m.arch) + " reads token ids, but " + cfg.data.path +
                    " is not a token dataset (its samples are " + shape_string(train.sample_shape) + ")");
  check_vocab_rows(m.vocab_size, index);
  const std::int64_t vocab = m.vocab_size != 0 ? m.vocab_size : train.num_classes;
  Config out = cfg;
  if (m.arch == Arch::llama) {
    LlamaDims d;
    d.n_layer = m.n_layer, d.n_head = m.n_head, d.n_embd = m.n_embd, d.vocab_size = vocab;
    d.ffn_dim = m.ffn_dim, d.rope_theta = m.rope_theta, d.tie_embeddings = m.tie_embeddings;
    d.norm_eps_exp = static_cast<int>(std::lround(-std::log10(m.norm_eps)));
    d.n_kv_heads = m.n_kv_heads, d.qk_norm = m.qk_norm, d.relu2 = m.mlp == Mlp::relu2, d.zero_init = m.zero_init;
    d.qkv_bias = m.qkv_bias, d.qk_norm_weight = m.qk_norm_weight, d.head_dim = m.head_dim;
    d.geglu = m.mlp == Mlp::geglu, d.norm_offset = m.norm_offset, d.embed_scale = m.embed_scale;
    d.sandwich_norm = m.sandwich_norm, d.rope_local_theta = m.rope_local_theta, d.global_every = m.global_every;
    d.sliding_window = m.sliding_window, d.attn_softcap = m.attn_softcap, d.final_softcap = m.final_softcap;
    d.query_scalar = m.query_pre_attn_scalar;
    d.embed_mult = m.embedding_multiplier, d.residual_mult = m.residual_multiplier;
    d.attention_mult = m.attention_multiplier, d.logits_scaling = m.logits_scaling;
    d.qk_norm_whole = m.qk_norm_whole, d.post_norm = m.post_norm;
    d.rope_scaling = rope_scaling_of(m.rope_scaling), d.rope_dims = m.rope_dims, d.no_rope_every = m.no_rope_every;
    out.model.layers = llama_layers(d);
  } else {
    GptDims d;
    d.n_layer = m.n_layer, d.n_head = m.n_head, d.n_embd = m.n_embd, d.vocab_size = vocab;
    d.bias = m.bias, d.tie_embeddings = m.tie_embeddings, d.gelu_tanh = m.activation == GptActivation::gelu_tanh;
    d.dropout_percent = static_cast<int>(std::lround(m.dropout * 100));
    out.model.layers = gpt_layers(d);
  }
  for (ResolvedKey& k : out.resolved)  // what a checkpoint stores and --dry-run prints
    if (k.name == "model.layers") {
      k.value = out.model.layers;
      k.source = std::string("arch = ") + name_of(m.arch);
    }
  return out;
}

}  // namespace hpctrain
