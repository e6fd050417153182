// Implementation of model/arch.hpp.
#include "hpctrain/model/arch.hpp"

#include <cmath>
#include <cstdio>

namespace hpctrain {

std::string gpt_layers(const GptDims& d) {
  char s[32];
  std::snprintf(s, sizeof(s), "%.5g", 0.02 / std::sqrt(2.0 * static_cast<double>(d.n_layer)));
  const std::string c = std::to_string(d.n_embd), v = std::to_string(d.vocab_size), proj_std(s);
  const std::string nobias = d.bias ? "" : ", bias=0", norm = d.bias ? "layernorm" : "layernorm(bias=0)";
  const std::string p = std::to_string(d.dropout_percent);
  const std::string drop = d.dropout_percent ? " dropout(" + p + ")" : "";
  const std::string attention = "attention(" + std::to_string(d.n_head) + nobias +
                                (d.dropout_percent ? ", dropout=" + p : "") + ", proj_std=" + proj_std + ")";
  const std::string mlp =
      "linear(" + std::to_string(4 * d.n_embd) + nobias + ") gelu linear(" + c + nobias + ", std=" + proj_std + ")";
  return "embedding(" + v + ", " + c + ") position_embedding" + drop + " repeat(" + std::to_string(d.n_layer) +
         ", res(" + norm + " " + attention + drop + ") res(" + norm + " " + mlp + drop + ")) " + norm + " lm_head(" +
         v + (d.tie_embeddings ? "" : ", tie=0") + ")";
}

}  // namespace hpctrain
