// The safetensors format (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header size, a JSON header ({name: {"dtype", "shape", "data_offsets"}, "__metadata__":
// {string: string}}) padded with spaces to 8 bytes, then the tensors' bytes packed in header
// order. What `trainer --export` writes: parameters and buffers under their layer names, as F32, or
// BF16 or F16 rounded to nearest even ([checkpoint] export_dtype).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hpctrain/core/dtype.hpp"
#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain {

struct NamedTensor {
  std::string name;  // "conv.0.weight"
  Shape shape;
  std::vector<float> data;
};

// The file's bytes: header size, header, data; the values `stored` as F32 (DType::f32), BF16 or F16.
std::string safetensors_bytes(const std::vector<NamedTensor>& tensors,
                              const std::map<std::string, std::string>& metadata, DType stored = DType::f32);
// Writes them to `path` through "<path>.partial", renamed when complete (bad_input naming the
// file when it cannot be written). F16: a tensor with a finite value beyond 65504 is refused
// (bad_input naming the file, the tensor and the value) before anything is written.
void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata, DType stored = DType::f32);

// Every tensor of a safetensors file, as float32 (F32, F16 and BF16 converted exactly), in header
// order. bad_input naming the file (and the tensor) for: a file that cannot be read, a header
// past the end, a tensor of another dtype, data offsets that do not fit its shape or the file.
std::vector<NamedTensor> read_safetensors(const std::string& path);
// The same from the file's bytes; `origin` names it in messages (tests/fuzz/fuzz_safetensors.cpp).
std::vector<NamedTensor> parse_safetensors(const std::string& bytes, const std::string& origin);

}  // namespace hpctrain
