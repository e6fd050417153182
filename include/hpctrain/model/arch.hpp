// Typed architectures ([model] arch): a network named by its dimensions. Each builds a layers
// string of the model grammar (layers/registry.hpp), so an architecture and that string are one
// network: the same tensors, initial values and losses (tests/unit/test_arch.cpp, tests/e2e/gpt.sh).
// Adding an architecture: docs/contributing.md.
#pragma once

#include <cstdint>
#include <string>

namespace hpctrain {

// GPT-2 / nanoGPT's decoder.
struct GptDims {
  std::int64_t n_layer = 0, n_head = 0, n_embd = 0, vocab_size = 0;
  bool bias = true, tie_embeddings = true;
  int dropout_percent = 0;  // after the embeddings, on attention's probabilities, ending each residual branch
};

// Token and position embeddings (then dropout), n_layer pairs of pre-norm residual blocks
// (attention with n_head heads; a 4 x n_embd GELU MLP), a final layer norm and the head (tied to
// the token embedding unless tie_embeddings = false). The two projections into the residual
// stream start with std 0.02 / sqrt(2 n_layer) (GPT-2's scaled initialization), written to 5
// significant digits as the decks in inputs/ write it.
std::string gpt_layers(const GptDims& d);

// Training FLOPs per token as llm.c and PaLM count them: 6 N (forward and backward through every
// parameter, embeddings included) + 12 n_layer n_embd T (attention's scores and weighted sums
// over a context of T).
double gpt_flops_per_token(std::int64_t parameters, std::int64_t n_layer, std::int64_t n_embd, std::int64_t context);

}  // namespace hpctrain
