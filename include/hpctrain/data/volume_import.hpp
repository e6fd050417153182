// Importing one-file-per-sample HDF5 volumes (hpctrain-data import-h5; docs/volumes.md): the
// layout CosmoFlow and LBANN use, each file holding a sample's volume (e.g. "full", [D, H, W, C]
// counts) and its targets (e.g. "unitPar", [K] floats), into hpctrain's shards of [C, D, H, W]
// float16 or float32 samples with [K] regression targets, in parallel over MPI ranks (shard k by
// rank k % N: the dataset is the same for any N).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hpctrain/data/dataset.hpp"
#include "hpctrain/data/table_import.hpp"  // SplitShard

namespace hpctrain {

struct VolumeImportOptions {
  std::vector<std::string> inputs;  // files, or glob patterns ("DIR/*.h5"), in any mix
  std::string out;
  std::string x = "full", y = "unitPar";  // the datasets of a sample file
  bool channels_last = true;              // --layout dhwc (CosmoFlow's); false: cdhw
  SampleType type = SampleType::f16;
  bool log1p = false;        // --transform log1p: x -> log(1 + x) before storing (MLPerf's for counts)
  std::string target_names;  // "" = none written
  double val_fraction = 0.1, test_fraction = 0;
  std::uint64_t shuffle_seed = 1;
  int shards = 1, rank = 0, ranks = 1;
  bool force = false;
  // Called now and then with this rank's files done, its total and the seconds so far.
  std::function<void(std::int64_t, std::int64_t, double)> progress;
};

// The files the inputs name, sorted and without repeats; bad_input when a pattern matches none.
std::vector<std::string> list_volume_files(const std::vector<std::string>& inputs);

// What every file must hold: the sample's shape [C, D, H, W] (as stored) and the target count.
struct VolumeLayout {
  std::vector<std::int64_t> sample_shape;
  std::int64_t targets = 0;
};
// From one file; bad_input naming the file and dataset when it is not a 4-D volume and 1-D targets.
VolumeLayout probe_volume(const std::string& path, const VolumeImportOptions& o);
// bad_input naming `path` when its volume or targets differ in shape from `layout` (the first file's).
void check_volume(const std::string& path, const VolumeImportOptions& o, const VolumeLayout& layout);
// Sample `path` as stored: the volume [C, D, H, W] (transposed, transformed) and the targets;
// bad_input naming the file when its shapes differ from `layout` or a value is not finite.
void read_volume(const std::string& path, const VolumeImportOptions& o, const VolumeLayout& layout,
                 std::vector<float>& volume, std::vector<float>& targets);

// This rank's shards of the plan (plan_split_shards over the files; the split folders ready:
// prepare_split_dir); returns the files
// it wrote. (On an error the command removes every shard of the plan: tools/data/hpctrain_data.cpp.)
std::int64_t write_volume_shards(const std::vector<std::string>& files, const VolumeLayout& layout,
                                 const std::vector<SplitShard>& plan, const VolumeImportOptions& o);

}  // namespace hpctrain
