// Hugging Face's config.json (checkpoint/hf_layouts.hpp): any JSON is read by both layouts, GPT-2's
// and Llama's, into the [model] keys or one hpctrain::Error naming the key (with no tensors
// given, a config that is accepted ends at the first missing tensor, also an Error).
#include <nlohmann/json.hpp>

#include "fuzz_target.hpp"
#include "hpctrain/checkpoint/hf_layouts.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hpctrain;
  const nlohmann::json config = nlohmann::json::parse(fuzz::text(data, size), nullptr, false);
  if (config.is_discarded()) return 0;  // (not JSON: the importer's own message, before any layout)
  fuzz::expect_refusal_only("gpt2_import", [&] { (void)hf::gpt2_import(config, {}, "fuzz/config.json", "fuzz"); });
  fuzz::expect_refusal_only("llama_import", [&] { (void)hf::llama_import(config, {}, "fuzz/config.json", "fuzz"); });
  return 0;
}
