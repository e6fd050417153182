// safetensors files (io/safetensors.hpp parse_safetensors): any bytes are tensors or one
// hpctrain::Error naming the file; a header whose shapes do not fit the file allocates nothing.
#include "fuzz_target.hpp"
#include "hpctrain/io/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes = hpctrain::fuzz::text(data, size);
  hpctrain::fuzz::expect_refusal_only("parse_safetensors",
                                      [&] { (void)hpctrain::parse_safetensors(bytes, "fuzz.safetensors"); });
  return 0;
}
