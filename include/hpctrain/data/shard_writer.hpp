// Writing dataset shards in the layout of data/dataset.hpp: used by the
// importer and generator tools and by tests. A shard is written under
// "<path>.tmp" and renamed when complete, so a crash never leaves a file
// that looks like a finished shard.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hpctrain/data/dataset.hpp"
#include "hpctrain/io/h5.hpp"

namespace hpctrain {

struct ShardSpec {
  std::vector<std::int64_t> sample_shape;  // without N
  SampleType type = SampleType::u8;
  bool classification = true;
  std::int64_t label_width = 1;                        // regression targets per sample
  std::int64_t num_classes = 10;                       // 0 for regression
  bool standardize = false;                            // write mean/std (else scale/offset)
  std::vector<double> norm_a{1.0 / 255}, norm_b{0.0};  // scale, offset  or  mean, std
  std::int64_t chunk_rows = 256;
  int gzip = 4;              // 0 = uncompressed
  std::string target_names;  // regression: the targets' names, comma-separated ("" = none written)
  std::string transform;     // "log1p": the reader takes log(1 + x) of each stored value first ("" = none)
};

class ShardWriter {
 public:
  ShardWriter(const std::string& path, const ShardSpec& spec, std::int64_t rows);
  ~ShardWriter();  // without close(): removes the temporary file
  // Appends rows: samples raw in the spec's type, labels int32 classes or float targets.
  void append(std::int64_t rows, const void* samples, const void* labels);
  void close();  // checks all rows were written, closes, renames into place

 private:
  std::string path_, tmp_;
  ShardSpec spec_;
  std::int64_t rows_ = 0, written_ = 0;
  h5::Id file_, samples_, labels_;
};

}  // namespace hpctrain
