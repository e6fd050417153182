// Synthetic, learnable classification data of any shape and size: class c has
// a prototype pattern; a sample is its class's prototype plus noise. Every
// sample is a pure function of (seed, index), so sets larger than memory are
// generated in a stream and any sample can be recomputed by a test.
#pragma once

#include <cstdint>
#include <vector>

#include "hpctrain/data/dataset.hpp"

namespace hpctrain {

struct SyntheticSpec {
  std::vector<std::int64_t> sample_shape{1, 28, 28};
  std::int64_t num_classes = 10;
  SampleType type = SampleType::u8;
  std::uint64_t seed = 1;
  double noise = 0.35;  // noise amplitude relative to the prototype range
};

// The label of sample `index`.
std::int32_t synthetic_label(const SyntheticSpec& spec, std::int64_t index);
// Writes sample `index` (raw bytes in spec.type: uint8 in [0, 255], floats in [-1, 1]).
void synthetic_sample(const SyntheticSpec& spec, std::int64_t index, void* out);

}  // namespace hpctrain
