// trainer --export's safetensors bytes (io/safetensors.hpp): the header size, the JSON header
// (names, F32, shapes, packed data_offsets, metadata with its strings escaped), 8-byte aligned
// data, the values little-endian in header order. (Read back by tools/safetensors_numpy.py and
// PyTorch in tests/e2e/exchange.sh.)
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "hpctrain/io/safetensors.hpp"

using namespace hpctrain;

TEST(Safetensors, HeaderOffsetsAlignmentAndData) {
  const std::vector<NamedTensor> tensors{{"00_dense.weight", {2, 3}, {1, 2, 3, 4, 5, 6}},
                                         {"00_dense.bias", {2}, {-1, 0.5f}}};
  const std::string bytes = safetensors_bytes(tensors, {{"hpctrain_deck", "[model]\nlayers = \"x\""}});
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  ASSERT_EQ(n % 8, 0u);  // the data start aligned
  ASSERT_EQ(bytes.size(), 8 + n + 8 * sizeof(float));
  const std::string header = bytes.substr(8, n);
  EXPECT_NE(header.find(R"("00_dense.weight":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]})"), std::string::npos)
      << header;
  EXPECT_NE(header.find(R"("00_dense.bias":{"dtype":"F32","shape":[2],"data_offsets":[24,32]})"), std::string::npos);
  EXPECT_NE(header.find(R"("__metadata__":{"hpctrain_deck":"[model]\nlayers = \"x\""})"), std::string::npos)
      << header;  // newlines and quotes escaped
  EXPECT_EQ(header.front(), '{');
  EXPECT_EQ(header[header.find_last_not_of(' ')], '}');  // the JSON, then only padding
  float values[8];
  std::memcpy(values, bytes.data() + 8 + n, sizeof(values));
  EXPECT_EQ(values[0], 1.f);
  EXPECT_EQ(values[5], 6.f);
  EXPECT_EQ(values[6], -1.f);
  EXPECT_EQ(values[7], 0.5f);
}
