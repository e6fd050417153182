// Hugging Face's config.json (checkpoint/hf_layouts.hpp): any JSON is read by both layouts, GPT-2's
// and Llama's, into the [model] keys or one hpctrain::Error naming the key (with no tensors
// given but 64 of no layer's names, a config that is accepted ends at the first missing tensor, also
// an Error).
#include <nlohmann/json.hpp>

#include "fuzz_target.hpp"
#include "hpctrain/checkpoint/hf_layouts.hpp"
#include "hpctrain/core/json_depth.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hpctrain;
  const std::string text = fuzz::text(data, size);
  try {  // (the importer's reader refuses deeper JSON before parsing it: core/json_depth.hpp)
    check_json_depth(text, "fuzz/config.json");
  } catch (const Error&) {
    return 0;
  }
  const nlohmann::json config = nlohmann::json::parse(text, nullptr, false);
  if (config.is_discarded()) return 0;  // (not JSON: the importer's own message, before any layout)
  // 64 tensors of no layer's names: a layer count up to 64 passes the count check (weights for
  // that many layers?), so the config's other keys are read before the first missing tensor.
  hf::Tensors tensors;
  for (int k = 0; k < 64; ++k) {
    const std::string name = "unused." + std::to_string(k);
    tensors[name] = LazyTensor{name, {1}, [](std::int64_t, std::int64_t, float* out) { *out = 0; }};
  }
  const auto at_a_tensor = [](const char* message) {  // (every key read: the first tensor is missing)
    return std::string(message).find(" is missing") != std::string::npos;
  };
  fuzz::expect_refusal_only(
      "gpt2_import", [&] { (void)hf::gpt2_import(config, tensors, "fuzz/config.json", "fuzz"); }, +at_a_tensor);
  fuzz::expect_refusal_only(
      "llama_import", [&] { (void)hf::llama_import(config, tensors, "fuzz/config.json", "fuzz"); }, +at_a_tensor);
  return 0;
}
