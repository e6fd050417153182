// Implementation of the IDX importer and the synthetic generator (data/make_dataset.hpp).
#include "hpctrain/data/make_dataset.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "hpctrain/core/error.hpp"
#include "hpctrain/data/idx.hpp"

namespace fs = std::filesystem;

namespace hpctrain {

void prepare_split_dir(const std::string& path, bool force) {
  const fs::path dir(path);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw bad_input("--out: cannot make the folder " + dir.string() + " (" + ec.message() + ")");
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".h5") continue;
    if (!force) throw bad_input(dir.string() + " already holds shards; remove them or pass --force");
    fs::remove(e.path());
  }
}

namespace {

// Writes samples [0, n) made by `fill(first, count, samples, labels)` as `shards` shards in `dir`.
template <typename Fill>
void write_split(const fs::path& dir, const ShardSpec& spec, std::int64_t n, int shards, Fill fill) {
  std::int64_t sample_bytes = static_cast<std::int64_t>(sample_type_size(spec.type));
  for (auto d : spec.sample_shape) sample_bytes *= d;
  const std::int64_t per = (n + shards - 1) / shards;
  const std::int64_t block = std::max<std::int64_t>(1, (std::int64_t{64} << 20) / sample_bytes);
  std::vector<unsigned char> samples;
  std::vector<std::int32_t> labels;
  for (int s = 0; s * per < n; ++s) {
    const std::int64_t first = s * per, rows = std::min(per, n - first);
    char name[32];
    std::snprintf(name, sizeof(name), "part-%05d.h5", s);
    ShardWriter w((dir / name).string(), spec, rows);
    for (std::int64_t r = 0; r < rows; r += block) {
      const std::int64_t count = std::min(block, rows - r);
      samples.resize(static_cast<std::size_t>(count * sample_bytes));
      labels.resize(static_cast<std::size_t>(count));
      fill(first + r, count, samples.data(), labels.data());
      w.append(count, samples.data(), labels.data());
    }
    w.close();
  }
}

}  // namespace

std::pair<std::int64_t, std::int64_t> import_idx(const ImportOptions& o) {
  if (o.split != "train" && o.split != "val" && o.split != "test")
    throw bad_input("split '" + o.split + "': expected train, val or test");
  const IdxArray images = read_idx(o.images);
  const IdxArray labels = read_idx(o.labels);
  if (images.dims.size() < 2) throw bad_input(o.images + ": expected an image file (2 or more dimensions)");
  if (labels.dims.size() != 1) throw bad_input(o.labels + ": expected a label file (1 dimension)");
  if (images.dims[0] != labels.dims[0])
    throw bad_input(o.images + ": " + std::to_string(images.dims[0]) + " images but " + o.labels + " has " +
                    std::to_string(labels.dims[0]) + " labels");
  const std::int64_t n = o.limit >= 0 ? std::min(images.dims[0], o.limit) : images.dims[0];
  if (o.val_count < 0 || o.val_count >= n)
    throw bad_input("val count " + std::to_string(o.val_count) + " must be in [0, " + std::to_string(n) + ")");
  ShardSpec spec;
  spec.sample_shape.assign(images.dims.begin() + 1, images.dims.end());
  spec.type = SampleType::u8;
  const auto max_label = *std::max_element(labels.data.begin(), labels.data.begin() + n);
  spec.num_classes = std::max<std::int64_t>(10, max_label + 1);
  if (o.standardize) {
    spec.standardize = true;
    spec.norm_a = {o.mean};
    spec.norm_b = {o.std};
  }
  spec.chunk_rows = o.chunk_rows;
  spec.gzip = o.gzip;
  const std::int64_t sample_bytes = static_cast<std::int64_t>(images.data.size()) / images.dims[0];
  auto from = [&](std::int64_t offset) {
    return [&, offset](std::int64_t first, std::int64_t count, unsigned char* s, std::int32_t* l) {
      std::memcpy(s, images.data.data() + (offset + first) * sample_bytes,
                  static_cast<std::size_t>(count * sample_bytes));
      for (std::int64_t i = 0; i < count; ++i) l[i] = labels.data[static_cast<std::size_t>(offset + first + i)];
    };
  };
  const fs::path root = o.out;
  prepare_split_dir((root / o.split).string(), o.force);
  write_split(root / o.split, spec, n - o.val_count, o.shards, from(0));
  if (o.val_count > 0) {
    prepare_split_dir((root / "val").string(), o.force);
    write_split(root / "val", spec, o.val_count, std::max<int>(1, static_cast<int>(o.shards * o.val_count / n)),
                from(n - o.val_count));
  }
  return {n - o.val_count, o.val_count};
}

std::pair<std::int64_t, std::int64_t> import_cifar(const std::vector<std::string>& files, bool cifar100,
                                                   const ImportOptions& o) {
  if (o.split != "train" && o.split != "val" && o.split != "test")
    throw bad_input("split '" + o.split + "': expected train, val or test");
  const std::size_t label_bytes = cifar100 ? 2 : 1, record = label_bytes + 3072;
  std::vector<unsigned char> images;
  std::vector<std::int32_t> labels;
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    if (!in || fs::is_directory(path)) throw bad_input(path + ": cannot open a file of CIFAR records");
    const std::vector<unsigned char> data{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (data.empty() || data.size() % record != 0)
      throw bad_input(path + ": " + std::to_string(data.size()) + " bytes is not a whole number of " +
                      std::to_string(record) + "-byte CIFAR-" + (cifar100 ? "100" : "10") + " records");
    for (std::size_t at = 0; at < data.size(); at += record) {
      const int label = data[at + label_bytes - 1];
      if (label >= (cifar100 ? 100 : 10))
        throw bad_input(path + ": record " + std::to_string(at / record) + " has label " + std::to_string(label));
      labels.push_back(label);
      images.insert(images.end(), data.begin() + static_cast<std::ptrdiff_t>(at + label_bytes),
                    data.begin() + static_cast<std::ptrdiff_t>(at + record));
    }
  }
  const auto n = static_cast<std::int64_t>(labels.size());
  if (o.val_count < 0 || o.val_count >= n)
    throw bad_input("val count " + std::to_string(o.val_count) + " must be in [0, " + std::to_string(n) + ")");
  ShardSpec spec;
  spec.sample_shape = {3, 32, 32};
  spec.num_classes = cifar100 ? 100 : 10;
  spec.chunk_rows = o.chunk_rows;
  spec.gzip = o.gzip;
  auto from = [&](std::int64_t offset) {
    return [&, offset](std::int64_t first, std::int64_t count, unsigned char* s, std::int32_t* l) {
      std::memcpy(s, images.data() + (offset + first) * 3072, static_cast<std::size_t>(count * 3072));
      std::memcpy(l, labels.data() + offset + first, static_cast<std::size_t>(count) * sizeof(std::int32_t));
    };
  };
  const fs::path root = o.out;
  prepare_split_dir((root / o.split).string(), o.force);
  write_split(root / o.split, spec, n - o.val_count, o.shards, from(0));
  if (o.val_count > 0) {
    prepare_split_dir((root / "val").string(), o.force);
    write_split(root / "val", spec, o.val_count, 1, from(n - o.val_count));
  }
  return {n - o.val_count, o.val_count};
}

void generate_dataset(const GenerateOptions& o) {
  ShardSpec spec;
  spec.sample_shape = o.spec.sample_shape;
  spec.type = o.spec.type;
  spec.num_classes = o.spec.num_classes;
  if (o.spec.type == SampleType::u8)
    spec.norm_a = {1.0 / 127.5}, spec.norm_b = {-1.0};
  else
    spec.norm_a = {1.0}, spec.norm_b = {0.0};
  spec.chunk_rows = o.chunk_rows;
  spec.gzip = o.gzip;
  std::int64_t sample_bytes = static_cast<std::int64_t>(sample_type_size(o.spec.type));
  for (auto d : o.spec.sample_shape) sample_bytes *= d;
  std::int64_t offset = 0;
  for (const auto& [split, n] :
       {std::pair<const char*, std::int64_t>{"train", o.train}, {"val", o.val}, {"test", o.test}}) {
    if (n <= 0) continue;
    const fs::path dir = fs::path(o.out) / split;
    prepare_split_dir(dir.string(), o.force);
    write_split(dir, spec, n, std::string(split) == "train" ? o.shards : std::max(1, o.shards / 4),
                [&, offset](std::int64_t first, std::int64_t count, unsigned char* s, std::int32_t* l) {
                  for (std::int64_t i = 0; i < count; ++i) {
                    synthetic_sample(o.spec, offset + first + i, s + i * sample_bytes);
                    l[i] = synthetic_label(o.spec, offset + first + i);
                  }
                });
    offset += n;
  }
}

}  // namespace hpctrain
