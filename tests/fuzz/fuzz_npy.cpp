// NumPy .npy files (data/table_import.hpp, hpctrain-data import-npy): the bytes as one file, read
// as both the features and the labels (read_npy: the header's version, length, dtype, order and
// shape, then the values; the labels' classes or targets).
#include <fstream>

#include "fuzz_target.hpp"
#include "hpctrain/data/table_import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hpctrain;
  const std::string path = fuzz::scratch_dir("npy") + "/array.npy";
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  fuzz::expect_refusal_only("read_npy", [&] { (void)read_npy(path, path); });
  return 0;
}
