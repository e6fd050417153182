// The safetensors format (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header size, a JSON header ({name: {"dtype", "shape", "data_offsets"}, "__metadata__":
// {string: string}}) padded with spaces to 8 bytes, then the tensors' bytes packed in header
// order. What `trainer --export` writes: float32 parameters and buffers under their layer names.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain {

struct NamedTensor {
  std::string name;  // "conv.0.weight"
  Shape shape;
  std::vector<float> data;
};

// The file's bytes: header size, header, data.
std::string safetensors_bytes(const std::vector<NamedTensor>& tensors,
                              const std::map<std::string, std::string>& metadata);
// Writes them to `path` through "<path>.partial", renamed when complete (bad_input naming the
// file when it cannot be written).
void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata);

}  // namespace hpctrain
