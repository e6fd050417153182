// hpctrain-data inspect ROOT: a dataset's splits and shards, a class histogram, and the value
// checks the trainer makes at start-up (inspect.hpp).
#include "inspect.hpp"

#include <hdf5.h>

#include <iostream>
#include <map>
#include <mutex>

#include "hpctrain/config/config.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/table.hpp"
#include "hpctrain/data/dataset.hpp"
#include "hpctrain/data/token_dataset.hpp"
#include "hpctrain/io/h5.hpp"

namespace hpctrain {

int inspect(const std::string& root) {
  DataConfig data;  // format = auto: hpctrain's shards or llm.c's
  data.path = root;
  const DatasetIndex index = scan_dataset(data);
  if (index.train.token_format == DataFormat::llmc)
    std::cout << "dataset " << root << " (llm.c token shards, " << index.train.tokenizer << " ids, uint"
              << index.train.token_bits << ")\n\n";
  else if (index.train.tokens)
    std::cout << "dataset " << root << " (" << kTokenFormat << " version " << kTokenVersion << ", tokenizer "
              << index.train.tokenizer << ")\n\n";
  else
    std::cout << "dataset " << root << " (" << kDatasetFormat << " version " << kDatasetVersion << ")\n\n";
  Table splits(
      {"split", "shards", "samples", "sample shape", "dtype", "labels", "num_classes", "x = raw*scale + offset"});
  Table files({"file", "samples", "first", "chunk rows", "compression"});
  std::map<std::int64_t, std::map<std::string, std::int64_t>> histogram;
  std::string problems;
  for (const SplitIndex* s : {&index.train, index.val ? &*index.val : nullptr, index.test ? &*index.test : nullptr}) {
    if (!s) continue;
    for (const auto& sh : s->shards) {
      files.add_row(
          {sh.path, std::to_string(sh.rows), std::to_string(sh.first), std::to_string(sh.chunk_rows), sh.compression});
      if (!s->classification || s->tokens) continue;
      std::lock_guard<std::mutex> lock(h5::lock());
      h5::Id f = h5::open_file(sh.path);
      h5::Id d(CHECK_H5(H5Dopen2(f.get(), "labels", H5P_DEFAULT)));
      std::vector<std::int64_t> labels(static_cast<std::size_t>(sh.rows));
      h5::read_rows(d.get(), H5T_NATIVE_INT64, 0, static_cast<hsize_t>(sh.rows), labels.data());
      for (auto l : labels) ++histogram[l][s->name];
    }
    const std::string p = check_values(*s, 0, s->shards.size());
    if (!p.empty()) problems += "problem: " + p + "\n";
  }
  std::cout << describe_splits(index) << "\n" << files.render();
  if (!histogram.empty()) {
    Table hist({"class", "train", "val", "test"});
    for (const auto& [cls, counts] : histogram) {
      auto get = [&](const char* k) {
        const auto it = counts.find(k);
        return std::to_string(it == counts.end() ? 0 : it->second);
      };
      hist.add_row({std::to_string(cls), get("train"), get("val"), get("test")});
    }
    std::cout << "\nclass histogram\n" << hist.render();
  }
  if (!problems.empty()) {
    std::cerr << problems;
    return 2;
  }
  std::cout << (!index.train.tokens ? "\nvalues checked: no NaN/Inf samples, every label in range\n"
                : index.train.max_id >= 0
                    ? "\nvalues checked: every token id inside the vocabulary and at most its split's max_token_id\n"
                    : "\nvalues checked: every token id inside the vocabulary\n");
  return 0;
}

}  // namespace hpctrain
