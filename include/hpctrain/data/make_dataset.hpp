// Making datasets in hpctrain's layout: importing IDX files (MNIST) and
// generating synthetic classification data. The hpctrain-data tool is a
// command line over these; tests call them directly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hpctrain/data/shard_writer.hpp"
#include "hpctrain/data/synthetic.hpp"

namespace hpctrain {

struct ImportOptions {
  std::string images, labels;  // IDX files, gzipped or plain
  std::string out;             // dataset root
  std::string split = "train";
  std::int64_t limit = -1;     // import only the first `limit` items (-1: all)
  std::int64_t val_count = 0;  // the last val_count of those go to val/
  int shards = 1;
  std::int64_t chunk_rows = 256;
  int gzip = 4;
  bool standardize = false;  // write mean/std (raw units) instead of scale 1/255
  double mean = 0, std = 1;
  bool force = false;  // replace existing shards of the split
};

// Returns {samples written to split, samples written to val/}.
std::pair<std::int64_t, std::int64_t> import_idx(const ImportOptions& o);

// CIFAR-10's binary files (data_batch_1.bin ... test_batch.bin: records of a label byte and
// 3,072 bytes of a [3, 32, 32] image), or CIFAR-100's (`fine`: a coarse and a fine label byte;
// the fine one, 100 classes, is kept), into o.out/o.split as uint8 [3, 32, 32], scale 1/255;
// o.val_count as for IDX. Returns what import_idx returns.
std::pair<std::int64_t, std::int64_t> import_cifar(const std::vector<std::string>& files, bool cifar100,
                                                   const ImportOptions& o);

struct GenerateOptions {
  SyntheticSpec spec;
  std::string out;
  std::int64_t train = 10000, val = 0, test = 0;  // val and test continue the sample index space
  int shards = 1;                                 // train shards (val and test: a quarter, at least 1)
  std::int64_t chunk_rows = 256;
  int gzip = 4;
  bool force = false;
};

void generate_dataset(const GenerateOptions& o);

}  // namespace hpctrain

namespace hpctrain {
// Creates `dir`; bad_input when it already holds shards (*.h5), unless `force` (then removes them).
void prepare_split_dir(const std::string& dir, bool force);
}  // namespace hpctrain
