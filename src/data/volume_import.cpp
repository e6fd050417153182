// One-file-per-sample HDF5 volumes into shards (data/volume_import.hpp).
#include "hpctrain/data/volume_import.hpp"

#include <glob.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <mutex>

#include "hpctrain/core/error.hpp"
#include "hpctrain/core/half.hpp"
#include "hpctrain/data/shard_writer.hpp"
#include "hpctrain/data/table_import.hpp"
#include "hpctrain/io/h5.hpp"

namespace fs = std::filesystem;

namespace hpctrain {

namespace {
// The dataset `name` of `file`, opened; bad_input naming both when it is missing.
h5::Id open_dataset(hid_t file, const std::string& path, const std::string& name) {
  if (!h5::has_link(file, name)) throw bad_input(path + ": no dataset '" + name + "' (--x / --y name them)");
  return h5::Id(CHECK_H5(H5Dopen2(file, name.c_str(), H5P_DEFAULT)));
}

h5::Id open_sample_file(const std::string& path) {
  if (H5Fis_hdf5(path.c_str()) <= 0) throw bad_input(path + ": not an HDF5 file");
  return h5::open_file(path);
}
}  // namespace

std::vector<std::string> list_volume_files(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const std::string& in : inputs) {
    glob_t g{};
    const int rc = glob(in.c_str(), 0, nullptr, &g);
    if (rc != 0) {
      globfree(&g);
      throw bad_input("--input '" + in + "': no such file");
    }
    for (std::size_t i = 0; i < g.gl_pathc; ++i) files.emplace_back(g.gl_pathv[i]);
    globfree(&g);
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  if (files.empty()) throw bad_input("--input: no files");
  return files;
}

namespace {
constexpr std::int64_t kMaxSampleValues = 2147483647;  // (2^31 - 1)

// The layout of a sample file's opened datasets (bad_input naming the file when they are not a
// 4-D volume and 1-D targets).
VolumeLayout layout_of(hid_t x, hid_t y, const std::string& path, const VolumeImportOptions& o) {
  const auto xs = h5::dataset_shape(x), ys = h5::dataset_shape(y);
  if (xs.size() != 4)
    throw bad_input(path + ": /" + o.x + " has " + std::to_string(xs.size()) + " dimensions; a volume needs 4 (" +
                    (o.channels_last ? "[D, H, W, C], --layout dhwc" : "[C, D, H, W], --layout cdhw") + ")");
  if (ys.size() != 1 || ys[0] < 1 || ys[0] > static_cast<hsize_t>(kMaxSampleValues))
    throw bad_input(path + ": /" + o.y + " must be 1-D targets [K]");
  // (an HDF5 file of a few kB can declare a chunked dataset of any size and store none of it)
  double values = 1;
  for (const auto d : xs) values *= static_cast<double>(d);
  if (values < 1 || values > static_cast<double>(kMaxSampleValues))
    throw bad_input(path + ": /" + o.x + " holds " + std::to_string(xs[0]) + " x " + std::to_string(xs[1]) + " x " +
                    std::to_string(xs[2]) + " x " + std::to_string(xs[3]) +
                    " values; a sample has 1 to 2^31 - 1 (8 GiB of float32)");
  VolumeLayout l;
  if (o.channels_last)
    l.sample_shape = {static_cast<std::int64_t>(xs[3]), static_cast<std::int64_t>(xs[0]),
                      static_cast<std::int64_t>(xs[1]), static_cast<std::int64_t>(xs[2])};
  else
    l.sample_shape.assign(xs.begin(), xs.end());
  l.targets = static_cast<std::int64_t>(ys[0]);
  return l;
}

void expect_layout(const std::string& path, const VolumeLayout& mine, const VolumeLayout& layout) {
  auto text = [](const std::vector<std::int64_t>& s) {
    std::string t;
    for (auto d : s) t += (t.empty() ? "[" : ", ") + std::to_string(d);
    return t + "]";
  };
  if (mine.sample_shape != layout.sample_shape || mine.targets != layout.targets)
    throw bad_input(path + ": a sample of " + text(mine.sample_shape) + " with " + std::to_string(mine.targets) +
                    " targets, but the first file's is " + text(layout.sample_shape) + " with " +
                    std::to_string(layout.targets));
}
}  // namespace

VolumeLayout probe_volume(const std::string& path, const VolumeImportOptions& o) {
  std::lock_guard<std::mutex> lock(h5::lock());
  h5::Id file = open_sample_file(path);
  h5::Id x = open_dataset(file.get(), path, o.x), y = open_dataset(file.get(), path, o.y);
  return layout_of(x.get(), y.get(), path, o);
}

void check_volume(const std::string& path, const VolumeImportOptions& o, const VolumeLayout& layout) {
  expect_layout(path, probe_volume(path, o), layout);
}

void read_volume(const std::string& path, const VolumeImportOptions& o, const VolumeLayout& layout,
                 std::vector<float>& volume, std::vector<float>& targets) {
  const std::int64_t c = layout.sample_shape[0],
                     vol = layout.sample_shape[1] * layout.sample_shape[2] * layout.sample_shape[3];
  std::vector<float> raw(static_cast<std::size_t>(c * vol));
  targets.resize(static_cast<std::size_t>(layout.targets));
  {  // (one open: its shapes checked, then read)
    std::lock_guard<std::mutex> lock(h5::lock());
    h5::Id file = open_sample_file(path);
    h5::Id x = open_dataset(file.get(), path, o.x), y = open_dataset(file.get(), path, o.y);
    expect_layout(path, layout_of(x.get(), y.get(), path, o), layout);
    CHECK_H5(H5Dread(x.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()));  // (converts integers)
    CHECK_H5(H5Dread(y.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, targets.data()));
  }
  volume.resize(raw.size());
  for (std::int64_t ch = 0; ch < c; ++ch)  // channels first, the transform, every value checked
    for (std::int64_t i = 0; i < vol; ++i) {
      float v =
          o.channels_last ? raw[static_cast<std::size_t>(i * c + ch)] : raw[static_cast<std::size_t>(ch * vol + i)];
      if (o.type == SampleType::u16 && !(v >= 0.f && v <= 65535.f && v == std::floor(v)))
        throw bad_input(path + ": /" + o.x + " holds " + std::to_string(v) +
                        ", not a count 0..65535 (--dtype uint16 stores counts; use float16 or float32)");
      if (o.log1p && o.type != SampleType::u16) v = std::log1p(v);  // (uint16: the reader applies it)
      if (!std::isfinite(v))
        throw bad_input(path + ": /" + o.x + " holds a value that is not finite" +
                        (o.log1p ? " after --transform log1p (a count below -1?)" : ""));
      volume[static_cast<std::size_t>(ch * vol + i)] = v;
    }
  for (float t : targets)
    if (!std::isfinite(t)) throw bad_input(path + ": /" + o.y + " holds a target that is not finite");
}

std::int64_t write_volume_shards(const std::vector<std::string>& files, const VolumeLayout& layout,
                                 const std::vector<SplitShard>& plan, const VolumeImportOptions& o) {
  ShardSpec spec;
  spec.sample_shape = layout.sample_shape;
  spec.type = o.type;
  spec.classification = false;
  spec.label_width = layout.targets;
  spec.num_classes = 0;
  spec.norm_a = {1.0};
  spec.norm_b = {0.0};
  spec.chunk_rows = 1;  // (a volume per chunk: readers take single samples)
  spec.gzip = 0;
  spec.target_names = o.target_names;
  if (o.log1p && o.type == SampleType::u16) spec.transform = "log1p";  // (counts stored, log1p when read)
  ImportProgress progress(plan, o.rank, o.ranks, o.progress);
  std::vector<float> volume, targets;
  std::vector<std::uint16_t> half;
  for (std::size_t k = 0; k < plan.size(); ++k) {
    if (!progress.mine(k)) continue;
    const SplitShard& sh = plan[k];
    char name[32];
    std::snprintf(name, sizeof(name), "part-%05d.h5", sh.index);
    const std::string path = (fs::path(o.out) / sh.split / name).string();
    ShardWriter w(path, spec, static_cast<std::int64_t>(sh.rows.size()));
    for (const std::int64_t f : sh.rows) {
      read_volume(files[static_cast<std::size_t>(f)], o, layout, volume, targets);
      if (o.type != SampleType::f32) {  // float16 bits, or uint16 counts (checked whole by read_volume)
        half.resize(volume.size());
        for (std::size_t i = 0; i < volume.size(); ++i)
          half[i] = o.type == SampleType::f16 ? half_bits(volume[i]) : static_cast<std::uint16_t>(volume[i]);
      }
      w.append(1, o.type == SampleType::f32 ? static_cast<const void*>(volume.data()) : half.data(), targets.data());
      progress.tick();
    }
    w.close();
  }
  return progress.done();
}

}  // namespace hpctrain
