// The INI configuration (config/config.hpp parse_config) and the schema's value parsers: any text
// is a Config or one hpctrain::Error.
#include "fuzz_target.hpp"
#include "hpctrain/config/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string ini = hpctrain::fuzz::text(data, size);
  const hpctrain::EnvLookup no_environment = [](const std::string&) { return std::optional<std::string>(); };
  hpctrain::fuzz::expect_refusal_only("parse_config", [&] {
    const hpctrain::Config cfg = hpctrain::parse_config(ini, "fuzz.ini", {}, no_environment);
    (void)hpctrain::effective_ini(cfg);  // what checkpoints store: must print what it parsed
  });
  hpctrain::fuzz::expect_refusal_only("ini_values", [&] { (void)hpctrain::ini_values(ini, "fuzz.ini"); });
  return 0;
}
