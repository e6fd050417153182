// Hugging Face checkpoints in and out, as LlamaForCausalLM reads and writes them: a folder with
// config.json and model.safetensors, or shards listed by model.safetensors.index.json
// (docs/fine-tuning.md, "Hugging Face weights").
//   trainer --import-hf DIR --out FILE.h5   an hpctrain checkpoint (format 2, step 0, no optimizer
//                                          state) for init_from, --eval-only and --generate
//   trainer DECK --export-hf DIR           the checkpoint [checkpoint] resume selects, back to
//                                          config.json + model.safetensors (float32) + the tokenizer's
//                                          files (tokenizer.json, or GPT-2's vocab.json and merges.txt)
// Tensors: Hugging Face's q_proj, k_proj, v_proj rows are hpctrain's fused qkv rows in that order
// (both rotate-half RoPE, so no permutation), gate_proj and up_proj the fused gate_up's halves,
// weights [out, in] on both sides. Buffers (rotary_emb.inv_freq) are skipped; any other unknown
// tensor, a missing one, a wrong shape or a config.json value hpctrain does not compute is one
// line naming the tensor or key, and nothing is written.
#pragma once

#include <string>

#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/config/config.hpp"
#include "hpctrain/io/h5.hpp"
#include "hpctrain/runtime/runtime.hpp"

namespace hpctrain {

// The tokenizer a checkpoint stores for --generate (its root attributes tokenizer and vocabulary,
// and the files): --import-hf's is the folder's, which the caller reads (Vocabulary::hf_folder,
// data/text_import.hpp); empty: none.
struct StoredTokenizer {
  std::string tokenizer, vocabulary;
  TokenizerFiles files;
};

// Collective; rank 0 reads and writes. Returns the lines to log: what was written and the deck's
// [model] section for it.
std::string import_hf(Communicator& comm, const std::string& dir, const std::string& out,
                      const StoredTokenizer& tokenizer = {});

// Collective; rank 0 writes DIR (created). `cfg`: an arch = llama deck. Returns the line to log.
std::string export_hf(const Config& cfg, Runtime& rt, const std::string& dir);

}  // namespace hpctrain
