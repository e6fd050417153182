// NumPy .npy files (data/table_import.hpp, hpctrain-data import-npy): the bytes as one file, read
// as both the features and the labels (read_npy: the header's version, length, dtype, order and
// shape, then the values; the labels' classes or targets).
#include "fuzz_target.hpp"
#include "hpctrain/data/table_import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hpctrain;
  const std::string path = fuzz::as_file("npy", "array.npy", data, size);
  fuzz::expect_refusal_only("read_npy", [&] { (void)read_npy(path, path); });
  return 0;
}
