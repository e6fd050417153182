// Importing tabular and array data: a CSV of features and a label (hpctrain-data import-csv) and
// NumPy .npy arrays (import-npy), as float32 shards in hpctrain's layout with per-feature
// standardization (mean and std over the training rows, stored as the shards' `mean` and `std`
// attributes, which the reader applies; docs/datasets.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hpctrain {

// Rows of features with their classes or regression targets, before splitting.
struct TableData {
  std::vector<std::int64_t> sample_shape;  // without N: [F] for a table
  std::vector<float> x;                    // rows x prod(sample_shape)
  std::vector<std::int32_t> classes;       // classification: one per row
  std::vector<float> targets;              // regression: rows x target_width
  std::int64_t target_width = 0;           // 0: classification
  std::int64_t num_classes = 0;
  std::vector<std::string> class_names;  // CSV labels that are not integers: the names, sorted (id = position)
  std::int64_t rows() const;
};

// Labels as class ids: all non-negative integers as they are, else the distinct names numbered in
// sorted order (returned; empty for integers). bad_input naming `where` for an empty label.
std::vector<std::string> number_classes(const std::vector<std::string>& labels, const std::string& where,
                                        std::vector<std::int32_t>& ids);

// Rows 0..n-1 shuffled by `seed` (0: in order), then the last val_fraction to val and the
// test_fraction after them to test; bad_input (naming `what`, "rows" or "images") when the
// fractions leave nothing to train on.
struct SplitRows {
  std::vector<std::int64_t> train, val, test;
};
SplitRows split_rows(std::int64_t n, double val_fraction, double test_fraction, std::uint64_t seed,
                     const std::string& what);
// Shard k of a split: its rows. A parallel import's plan (every rank computes the same; shard k
// of the list written by rank k % N): split_rows, then train in `train_shards` shards, val and
// test in `other_shards` each.
struct SplitShard {
  std::string split;
  int index = 0;
  std::vector<std::int64_t> rows;
};
// A parallel import's share and progress: rank `rank` of `ranks` writes shard k of the plan when
// k % ranks == rank; tick() after each row calls `report(done, total, seconds)` at most every 2 s
// and at the last row.
class ImportProgress {
 public:
  ImportProgress(const std::vector<SplitShard>& plan, int rank, int ranks,
                 std::function<void(std::int64_t, std::int64_t, double)> report);
  bool mine(std::size_t k) const { return static_cast<int>(k % static_cast<std::size_t>(ranks_)) == rank_; }
  void tick();
  std::int64_t done() const { return done_; }

 private:
  int rank_, ranks_;
  std::function<void(std::int64_t, std::int64_t, double)> report_;
  std::int64_t total_ = 0, done_ = 0;
  std::chrono::steady_clock::time_point start_, last_;
};
std::vector<SplitShard> plan_split_shards(std::int64_t n, double val_fraction, double test_fraction, std::uint64_t seed,
                                          const std::string& what, int train_shards, int other_shards);

struct CsvOptions {
  std::string path;
  std::vector<std::string> label_columns;  // empty: the last column
  bool regression = false;                 // labels are float targets (else classes)
};
// A CSV with a header row; bad_input naming the file, line and column for a cell that is not a number.
TableData read_csv(const CsvOptions& o);

// features.npy [N, ...] (any integer or float type, C order) and labels.npy: [N] integers
// (classes) or [N] / [N, k] floats (regression targets).
TableData read_npy(const std::string& features, const std::string& labels);

struct TableImportOptions {
  std::string out;
  double val_fraction = 0.1, test_fraction = 0;  // the last rows (after the shuffle) go to val, then test
  std::uint64_t shuffle_seed = 1;                // 0: keep the file's order
  bool standardize = true;                       // per feature ([F] samples) or over all values (others)
  int shards = 1;
  std::int64_t chunk_rows = 256;
  int gzip = 4;
  bool force = false;
};
struct TableImportResult {
  std::int64_t train = 0, val = 0, test = 0;
};
TableImportResult write_table_dataset(const TableData& data, const TableImportOptions& o);

}  // namespace hpctrain
