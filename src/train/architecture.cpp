// [model] arch resolved against the dataset (train/trainer.hpp with_architecture).
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
  ModelConfig resolved = m;  // (the layers say the vocabulary's rows; the key stays as given)
  resolved.vocab_size = vocab;
  out.model.layers = arch_layers(resolved);
  for (ResolvedKey& k : out.resolved)  // what a checkpoint stores and --dry-run prints
    if (k.name == "model.layers") {
      k.value = out.model.layers;
      k.source = std::string("arch = ") + name_of(m.arch);
    }
  return out;
}

}  // namespace hpctrain
