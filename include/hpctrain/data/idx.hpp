// Reading IDX files (the MNIST distribution format), gzipped or plain.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hpctrain {

struct IdxArray {
  std::vector<std::int64_t> dims;  // dims[0] = number of items
  std::vector<std::uint8_t> data;  // unsigned-byte payload, row-major
};

// Throws bad_input naming the file when it is missing, not IDX, not unsigned
// bytes, or shorter than its header says.
IdxArray read_idx(const std::string& path);

}  // namespace hpctrain
