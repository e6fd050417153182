// The safetensors format (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header size, a JSON header ({name: {"dtype", "shape", "data_offsets"}, "__metadata__":
// {string: string}}) padded with spaces to 8 bytes, then the tensors' bytes packed in header
// order. What `trainer --export` writes: parameters and buffers under their layer names, as F32, or
// BF16 or F16 rounded to nearest even ([checkpoint] export_dtype).
#pragma once

#include <cstdint>
#include <functional>
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

// A tensor whose values are made when asked: read from a file, stacked, sliced, transposed. The
// Hugging Face import and export hold every tensor's name and shape but one tensor's values at a
// time, so their memory is the largest tensors, not the model. Rows are the first dimension (a
// 1-d tensor's elements; a scalar is one row).
struct LazyTensor {
  std::string name;
  Shape shape;
  // Rows [first, first + count) of the row-major values, as float32, to `out`.
  std::function<void(std::int64_t first, std::int64_t count, float* out)> rows;
  std::int64_t row_count() const { return shape.empty() ? 1 : shape[0]; }
  std::int64_t row_width() const { return shape.empty() || shape[0] == 0 ? 1 : numel(shape) / shape[0]; }
  std::vector<float> values() const;  // every row
};
// Views of `tensors` (which must outlive them): their values as LazyTensor rows.
std::vector<LazyTensor> lazy_views(const std::vector<NamedTensor>& tensors);

// The file's bytes: header size, header, data; the values `stored` as F32 (DType::f32), BF16 or F16.
std::string safetensors_bytes(const std::vector<NamedTensor>& tensors,
                              const std::map<std::string, std::string>& metadata, DType stored = DType::f32);
// Writes them to `path` through "<path>.partial", renamed when complete, one tensor's values in
// memory at a time (bad_input naming the file when it cannot be written). F16: a tensor with a
// finite value beyond 65504 is refused (bad_input naming the file, the tensor and the value), and
// the partial file removed.
void write_safetensors(const std::string& path, const std::vector<LazyTensor>& tensors,
                       const std::map<std::string, std::string>& metadata, DType stored = DType::f32);
void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata, DType stored = DType::f32);
// A text file beside the weights (config.json, the index, tokenizer files) through "<path>.partial",
// renamed when complete (bad_input naming it when it cannot be written).
void write_text_file(const std::string& path, const std::string& text);
// The bytes `tensors` take in a file as `stored` (header not counted).
std::uint64_t safetensors_data_bytes(const std::vector<LazyTensor>& tensors, DType stored);

// A file name of the sharded layout below: model.safetensors, model-NNNNN-of-NNNNN.safetensors,
// model.safetensors.index.json.
bool safetensors_layout_file(const std::string& name);
// Hugging Face's sharded layout in folder `dir` (as save_pretrained writes it): model.safetensors when
// the tensors take at most `shard_bytes`, else model-00001-of-0000N.safetensors ... (tensors in order,
// a new shard when the next would pass `shard_bytes`; a larger tensor alone) and
// model.safetensors.index.json (metadata.total_size, weight_map: tensor -> shard), written into
// `dir` (a new folder: replace_folder, io/staged_folder.hpp, replaces an earlier export's as a whole
// and drops that export's files of the layout). Returns the files written, in order.
std::vector<std::string> write_safetensors_folder(const std::string& dir, const std::vector<LazyTensor>& tensors,
                                                  const std::map<std::string, std::string>& metadata, DType stored,
                                                  std::uint64_t shard_bytes);

// Every tensor of a safetensors file, as float32 (F32, F16 and BF16 converted exactly), in header
// order. bad_input naming the file (and the tensor) for: a file that cannot be read, a header
// past the end, a tensor of another dtype, data offsets that do not fit its shape or the file.
std::vector<NamedTensor> read_safetensors(const std::string& path);
// The same checks now (the header), each tensor's values read from the file when asked.
std::vector<LazyTensor> safetensors_tensors(const std::string& path);
// The same from the file's bytes; `origin` names it in messages (tests/fuzz/fuzz_safetensors.cpp).
std::vector<NamedTensor> parse_safetensors(const std::string& bytes, const std::string& origin);

}  // namespace hpctrain
