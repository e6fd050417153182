// Scanning and validating a dataset root (data/dataset.hpp): shard structure
// on one rank, values on all ranks, the index broadcast in between.
#include "hpctrain/data/dataset.hpp"

#include "hpctrain/data/llmc_shards.hpp"
#include "hpctrain/data/store.hpp"
#include "hpctrain/data/token_dataset.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "hpctrain/comm/agreement.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/table.hpp"
#include "hpctrain/io/h5.hpp"

namespace fs = std::filesystem;

namespace hpctrain {

const char* to_string(SampleType t) {
  switch (t) {
    case SampleType::u8: return "uint8";
    case SampleType::f16: return "float16";
    case SampleType::f32: return "float32";
    case SampleType::i32: return "int32";
    case SampleType::u16: return "uint16";
  }
  return "?";
}

std::size_t sample_type_size(SampleType t) {
  switch (t) {
    case SampleType::u8: return 1;
    case SampleType::f16: return 2;
    case SampleType::f32: return 4;
    case SampleType::i32: return 4;
    case SampleType::u16: return 2;
  }
  return 0;
}

hid_t raw_sample_type(hid_t dataset, SampleType t, h5::Id* holder) {
  switch (t) {
    case SampleType::u8: return H5T_NATIVE_UINT8;
    case SampleType::f32: return H5T_NATIVE_FLOAT;
    case SampleType::i32: return H5T_NATIVE_INT32;
    case SampleType::u16: return H5T_NATIVE_UINT16;
    case SampleType::f16: *holder = h5::Id(CHECK_H5(H5Dget_type(dataset))); return holder->get();
  }
  return H5T_NATIVE_UINT8;
}

namespace {
// "a, b,c" -> {"a", "b", "c"} (spaces around the names dropped).
std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    std::string name = text.substr(at, comma - at);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    out.push_back(name);
    at = comma + 1;
  }
  return out;
}
}  // namespace

std::vector<std::string> SplitIndex::target_labels() const {
  if (!target_names.empty()) return split_names(target_names);
  std::vector<std::string> out;
  for (std::int64_t j = 0; j < label_width; ++j) out.push_back("target" + std::to_string(j));
  return out;
}

std::int64_t SplitIndex::sample_elems() const {
  std::int64_t n = 1;
  for (auto d : sample_shape) n *= d;
  return n;
}

std::vector<std::int64_t> SplitIndex::output_shape() const {
  if (tokens) return {block_size, num_classes};
  return {classification ? num_classes : label_width};
}

std::vector<std::int64_t> SplitIndex::chunk_bounds() const {
  if (tokens) return {0, total};  // windows: no HDF5 chunks to keep together
  std::vector<std::int64_t> b{0};
  for (const auto& s : shards)
    for (std::int64_t r = 0; r < s.rows; r += s.chunk_rows) b.push_back(s.first + std::min(s.rows, r + s.chunk_rows));
  return b;
}

const Shard& SplitIndex::shard_of(std::int64_t index) const {
  const auto it =
      std::upper_bound(shards.begin(), shards.end(), index, [](std::int64_t i, const Shard& s) { return i < s.first; });
  HPCT_CHECK(it != shards.begin() && index < total, "sample index " + std::to_string(index) + " outside the split");
  return *(it - 1);
}

namespace {

[[noreturn]] void bad(const std::string& path, const std::string& what) { throw bad_input(path + ": " + what); }

std::string shape_text(const std::vector<hsize_t>& dims, bool star_first) {
  std::string out = "[";
  for (std::size_t i = 0; i < dims.size(); ++i)
    out += (i ? ", " : "") + (i == 0 && star_first ? std::string("N") : std::to_string(dims[i]));
  return out + "]";
}

std::string type_text(hid_t type) {
  const H5T_class_t cls = H5Tget_class(type);
  const std::size_t size = H5Tget_size(type);
  std::string kind = cls == H5T_INTEGER  ? (H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int")
                     : cls == H5T_FLOAT  ? "float"
                     : cls == H5T_STRING ? "string"
                                         : "class " + std::to_string(static_cast<int>(cls)) + " of ";
  return kind + std::to_string(size * 8);
}

// Checks that every filter of a dataset is available; returns a description.
std::string check_filters(const std::string& path, const std::string& dset, hid_t dataset, std::int64_t* chunk_rows) {
  h5::Id dcpl(CHECK_H5(H5Dget_create_plist(dataset)));
  if (H5Pget_layout(dcpl.get()) == H5D_CHUNKED) {
    std::vector<hsize_t> chunk(32);
    const int n = H5Pget_chunk(dcpl.get(), 32, chunk.data());
    if (chunk_rows && n > 0) *chunk_rows = static_cast<std::int64_t>(chunk[0]);
  }
  std::string desc;
  const int nfilters = H5Pget_nfilters(dcpl.get());
  for (int i = 0; i < nfilters; ++i) {
    unsigned flags = 0, config = 0;
    std::size_t nelems = 8;
    unsigned values[8] = {0};
    char name[128] = {0};
    const H5Z_filter_t id =
        H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &nelems, values, sizeof(name), name, &config);
    if (H5Zfilter_avail(id) <= 0)
      bad(path, "dataset " + dset + " uses compression filter '" + name + "' (id " + std::to_string(id) +
                    "), which this HDF5 library does not have");
    std::string one = id == H5Z_FILTER_DEFLATE ? "gzip(" + std::to_string(nelems ? values[0] : 0) + ")" : name;
    desc += (desc.empty() ? "" : "+") + one;
  }
  return desc.empty() ? "none" : desc;
}

std::int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page : (std::int64_t{1} << 34);
}

// The root attributes: format and version. False when the shard is a token shard (it is read by
// scan_token_shard instead).
bool check_root_attributes(hid_t file, const std::string& path) {
  try {
    if (!h5::has_attribute(file, "format"))
      bad(path, "root attribute 'format' missing: not an hpctrain dataset shard (expected format = \"" +
                    std::string(kDatasetFormat) + "\")");
    const std::string format = h5::read_string_attribute(file, "format");
    if (format == kTokenFormat) return false;
    if (format != kDatasetFormat)
      bad(path, "root attribute format = \"" + format + "\", expected \"" + kDatasetFormat + "\"");
    if (!h5::has_attribute(file, "version")) bad(path, "root attribute 'version' missing");
    const long long version = h5::read_int_attribute(file, "version");
    if (version < 1 || version > kDatasetVersion)
      bad(path, "format version " + std::to_string(version) + " is not supported (this build reads version " +
                    std::to_string(kDatasetVersion) + ")");
  } catch (const Error& e) {
    if (e.code() == ExitCode::bad_input && std::string(e.what()).rfind(path, 0) == 0) throw;
    bad(path, std::string("bad root attribute: ") + e.what());
  }
  return true;
}

// /samples: its element type and shape [N, d1, ...], within the size limits.
struct SampleLayout {
  SampleType type = SampleType::f32;
  std::vector<hsize_t> dims;
};

SampleLayout sample_layout(hid_t samples, const std::string& path) {
  h5::Id stype(CHECK_H5(H5Dget_type(samples)));
  SampleLayout out;
  const H5T_class_t scls = H5Tget_class(stype.get());
  const std::size_t ssize = H5Tget_size(stype.get());
  if (scls == H5T_INTEGER && ssize == 1 && H5Tget_sign(stype.get()) == H5T_SGN_NONE)
    out.type = SampleType::u8;
  else if (scls == H5T_INTEGER && ssize == 2 && H5Tget_sign(stype.get()) == H5T_SGN_NONE)
    out.type = SampleType::u16;
  else if (scls == H5T_FLOAT && ssize == 2)
    out.type = SampleType::f16;
  else if (scls == H5T_FLOAT && ssize == 4)
    out.type = SampleType::f32;
  else
    bad(path, "/samples has type " + type_text(stype.get()) + "; supported: uint8, uint16, float16, float32");
  const auto& sdims = out.dims = h5::dataset_shape(samples);
  if (sdims.size() < 2)
    bad(path, "/samples has shape " + shape_text(sdims, false) + "; expected [N, d1, ...] (N samples of rank >= 1)");
  if (sdims[0] == 0) bad(path, "empty shard: /samples has 0 rows");
  std::int64_t elems = 1;
  for (std::size_t i = 1; i < sdims.size(); ++i) {
    if (sdims[i] == 0) bad(path, "/samples has a zero dimension: shape " + shape_text(sdims, false));
    if (__builtin_mul_overflow(elems, static_cast<std::int64_t>(sdims[i]), &elems))
      bad(path, "/samples shape " + shape_text(sdims, false) + ": the sample size overflows 64 bits");
  }
  std::int64_t sample_bytes = 0, total_bytes = 0;
  if (__builtin_mul_overflow(elems, static_cast<std::int64_t>(ssize), &sample_bytes) ||
      __builtin_mul_overflow(sample_bytes, static_cast<std::int64_t>(sdims[0]), &total_bytes))
    bad(path, "/samples shape " + shape_text(sdims, false) + ": the size in bytes overflows 64 bits");
  if (sample_bytes > physical_memory_bytes() / 8)
    bad(path, "/samples shape " + shape_text(sdims, false) + ": one sample is " + std::to_string(sample_bytes) +
                  " bytes, more than an eighth of this machine's memory");
  return out;
}

// /labels ([N] integer classes or [N, k] float targets) and num_classes: `classes`, `width` (k or
// 1) and the number of classes (0 for targets).
void label_layout(hid_t file, hid_t labels, const std::string& path, hsize_t rows, bool& classes, std::int64_t& width,
                  std::int64_t& num_classes) {
  h5::Id ltype(CHECK_H5(H5Dget_type(labels)));
  const auto ldims = h5::dataset_shape(labels);
  const H5T_class_t lcls = H5Tget_class(ltype.get());
  classes = lcls == H5T_INTEGER && ldims.size() == 1;
  const bool targets = lcls == H5T_FLOAT && ldims.size() == 2 && ldims[1] > 0 && ldims[1] < (1u << 20);
  if (!classes && !targets)
    bad(path, "/labels is " + type_text(ltype.get()) + " " + shape_text(ldims, false) +
                  "; expected [N] integer classes or [N, k] float targets");
  if (ldims[0] != rows)
    bad(path, "/samples has " + std::to_string(rows) + " rows but /labels has " + std::to_string(ldims[0]));
  width = targets ? static_cast<std::int64_t>(ldims[1]) : 1;
  if (!h5::has_attribute(file, "num_classes")) bad(path, "root attribute 'num_classes' missing");
  num_classes = h5::read_int_attribute(file, "num_classes");
  if (classes && num_classes < 1)
    bad(path, "num_classes = " + std::to_string(num_classes) + " but /labels holds classes (needs num_classes >= 1)");
  if (targets && num_classes != 0)
    bad(path, "/labels holds float targets (regression) but num_classes = " + std::to_string(num_classes) + " (use 0)");
}

// The normalization attributes ('scale' and 'offset', or 'mean' and 'std'), as scale and offset
// with one value or one per channel.
void read_normalization(hid_t file, const std::string& path, std::int64_t channels, std::vector<double>& scale,
                        std::vector<double>& offset) {
  auto per_channel = [&](const char* name, const std::vector<double>& v) {
    if (v.size() != 1 && static_cast<std::int64_t>(v.size()) != channels)
      bad(path, std::string("attribute '") + name + "' has " + std::to_string(v.size()) +
                    " values; expected 1 or one per channel or feature (" + std::to_string(channels) + ")");
    for (double x : v)
      if (!std::isfinite(x)) bad(path, std::string("attribute '") + name + "' holds NaN or Inf");
  };
  if (h5::has_attribute(file, "mean") || h5::has_attribute(file, "std")) {
    if (!h5::has_attribute(file, "mean") || !h5::has_attribute(file, "std"))
      bad(path, "attributes 'mean' and 'std' must come together");
    const auto mean = h5::read_double_attribute(file, "mean");
    const auto sd = h5::read_double_attribute(file, "std");
    per_channel("mean", mean);
    per_channel("std", sd);
    if (mean.size() != sd.size()) bad(path, "attributes 'mean' and 'std' have different lengths");
    for (std::size_t c = 0; c < sd.size(); ++c) {
      if (sd[c] == 0) bad(path, "attribute 'std' is 0 for channel " + std::to_string(c) + " (division by zero)");
      scale.push_back(1.0 / sd[c]);
      offset.push_back(-mean[c] / sd[c]);
    }
  } else if (h5::has_attribute(file, "scale") && h5::has_attribute(file, "offset")) {
    scale = h5::read_double_attribute(file, "scale");
    offset = h5::read_double_attribute(file, "offset");
    per_channel("scale", scale);
    per_channel("offset", offset);
    if (scale.size() != offset.size()) bad(path, "attributes 'scale' and 'offset' have different lengths");
  } else {
    bad(path, "no normalization attributes: give 'scale' and 'offset', or 'mean' and 'std'");
  }
}

// The first shard sets the split's layout; every other shard must match it.
void merge_layout(SplitIndex& split, const SplitIndex& shard, bool first, const std::string& path,
                  const std::string& first_path) {
  if (first) {
    split.sample_shape = shard.sample_shape;
    split.sample_type = shard.sample_type;
    split.classification = shard.classification;
    split.label_width = shard.label_width;
    split.num_classes = shard.num_classes;
    split.target_names = shard.target_names;
    split.log1p = shard.log1p;
    split.scale = shard.scale;
    split.offset = shard.offset;
    return;
  }
  std::vector<hsize_t> mine{0}, theirs{0};
  for (auto d : shard.sample_shape) mine.push_back(static_cast<hsize_t>(d));
  for (auto d : split.sample_shape) theirs.push_back(static_cast<hsize_t>(d));
  if (shard.sample_shape != split.sample_shape)
    bad(path,
        "/samples shape " + shape_text(mine, true) + " differs from " + first_path + ": " + shape_text(theirs, true));
  if (shard.sample_type != split.sample_type)
    bad(path, std::string("/samples type ") + to_string(shard.sample_type) + " differs from " + first_path + ": " +
                  to_string(split.sample_type));
  if (shard.classification != split.classification || shard.label_width != split.label_width)
    bad(path, "/labels kind or width differs from " + first_path);
  if (shard.num_classes != split.num_classes)
    bad(path, "num_classes = " + std::to_string(shard.num_classes) + " differs from " + first_path + ": " +
                  std::to_string(split.num_classes));
  if (shard.scale != split.scale || shard.offset != split.offset)
    bad(path, "normalization attributes differ from " + first_path);
}

// Reads one shard's structure into `split` (first shard) or checks it matches.
Shard scan_shard(const std::string& path, SplitIndex& split, bool first, const std::string& first_path) {
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    bad(path, "not an HDF5 file (or truncated: the file signature is missing)");
  }
  const hid_t fid = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (fid < 0) bad(path, "cannot be opened as HDF5 (truncated or damaged?): " + hdf5_error_text());
  h5::Id file(fid);
  if (!check_root_attributes(file.get(), path)) return scan_token_shard(file.get(), path, split, first, first_path);

  for (const char* name : {"samples", "labels"})
    if (!h5::has_link(file.get(), name)) bad(path, std::string("dataset /") + name + " missing");
  const hid_t sid = H5Dopen2(file.get(), "samples", H5P_DEFAULT);
  if (sid < 0) bad(path, "/samples is not a dataset: " + hdf5_error_text());
  h5::Id samples(sid);
  const hid_t lid = H5Dopen2(file.get(), "labels", H5P_DEFAULT);
  if (lid < 0) bad(path, "/labels is not a dataset: " + hdf5_error_text());
  h5::Id labels(lid);

  const SampleLayout sl = sample_layout(samples.get(), path);
  SplitIndex mine;  // this shard's layout
  mine.sample_type = sl.type;
  mine.sample_shape.assign(sl.dims.begin() + 1, sl.dims.end());
  label_layout(file.get(), labels.get(), path, sl.dims[0], mine.classification, mine.label_width, mine.num_classes);
  if (h5::has_attribute(file.get(), "transform")) {  // (uint16 counts, MLPerf's log1p applied when reading)
    const std::string t = h5::read_string_attribute(file.get(), "transform");
    if (t != "log1p" || mine.sample_type != SampleType::u16)
      bad(path, "attribute 'transform' = '" + t + "': only log1p, on uint16 samples");
    mine.log1p = true;
  }
  if (!mine.classification &&
      h5::has_attribute(file.get(), "target_names")) {  // "Omega_m, sigma_8, ...": the logs' names
    mine.target_names = h5::read_string_attribute(file.get(), "target_names");
    if (static_cast<std::int64_t>(split_names(mine.target_names).size()) != mine.label_width)
      bad(path, "attribute 'target_names' (\"" + mine.target_names + "\") does not name the " +
                    std::to_string(mine.label_width) + " targets of /labels (comma-separated)");
  }
  std::vector<double> scale, offset;
  // Per channel of [C, H, W] images and [C, D, H, W] volumes, per feature of [F] (tabular) samples; a
  // [H, W] image is one channel.
  const std::int64_t channels = sl.dims.size() >= 4 || sl.dims.size() == 2 ? static_cast<std::int64_t>(sl.dims[1]) : 1;
  read_normalization(file.get(), path, channels, scale, offset);
  mine.scale.assign(scale.begin(), scale.end());
  mine.offset.assign(offset.begin(), offset.end());

  Shard shard;
  shard.path = path;
  shard.rows = static_cast<std::int64_t>(sl.dims[0]);
  shard.chunk_rows = shard.rows;
  shard.compression = check_filters(path, "/samples", samples.get(), &shard.chunk_rows);
  check_filters(path, "/labels", labels.get(), nullptr);
  if (shard.chunk_rows < 1) shard.chunk_rows = shard.rows;
  merge_layout(split, mine, first, path, first_path);
  return shard;
}

namespace {
// For a path that is not a dataset: what it looks like, and the command that makes one of it.
std::string what_it_holds(const std::string& root) {
  std::error_code ec;
  const fs::path p(root);
  if (fs::is_regular_file(p, ec) && p.extension() == ".h5")
    return " (it is a file: give the dataset's folder, the one holding train/, " +
           (p.parent_path().filename() == "train" ? p.parent_path().parent_path().string() : std::string("...")) + ")";
  if (p.filename() == "train" || p.filename() == "val" || p.filename() == "test")
    return " (it is a split: give the folder above it, " + p.parent_path().string() + ")";
  for (const auto& e : fs::directory_iterator(p, ec))
    if (e.path().filename().string().find("idx") != std::string::npos)
      return " (it holds IDX files: make a dataset of them with hpctrain-data import-idx --images FILE --labels "
             "FILE --out DIR, docs/datasets.md)";
  return "";
}
}  // namespace

std::optional<SplitIndex> scan_split(const std::string& root, const std::string& name, bool required) {
  const fs::path dir = fs::path(root) / name;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    if (required)
      throw bad_input("[data] path '" + root + "': no " + name + "/ directory of shards" + what_it_holds(root));
    return std::nullopt;
  }
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".h5") files.push_back(e.path().string());
  if (ec) throw bad_input(dir.string() + ": cannot be listed: " + ec.message());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw bad_input(dir.string() + ": no shard files (*.h5)");
  SplitIndex split;
  split.name = name;
  for (std::size_t i = 0; i < files.size(); ++i) {
    Shard s;
    try {
      s = scan_shard(files[i], split, i == 0, files[0]);
    } catch (const Error& e) {  // every refusal names the file (an attribute of the wrong type did not)
      if (e.code() != ExitCode::bad_input || std::string(e.what()).find(files[i]) != std::string::npos) throw;
      throw bad_input(files[i] + ": " + e.what());
    }
    s.first = split.total;
    if (__builtin_add_overflow(split.total, s.rows, &split.total)) throw bad_input(files[i] + ": too many samples");
    split.shards.push_back(s);
  }
  return split;
}

}  // namespace

DatasetIndex scan_dataset(const std::string& root) {
  std::lock_guard<std::mutex> lock(h5::lock());
  if (root.empty()) throw bad_input("[data] path is not set: give the dataset root (holding train/, val/, test/)");
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    throw bad_input("[data] path '" + root + "': " + (fs::exists(root, ec) ? "not a directory" : "no such directory") +
                    what_it_holds(root));
  DatasetIndex index;
  index.root = root;
  index.train = *scan_split(root, "train", true);
  index.val = scan_split(root, "val", false);
  index.test = scan_split(root, "test", false);
  for (const auto* s : {&index.val, &index.test}) {
    if (!*s) continue;
    const SplitIndex& other = **s;
    if (other.sample_shape != index.train.sample_shape || other.sample_type != index.train.sample_type ||
        other.classification != index.train.classification || other.label_width != index.train.label_width ||
        other.num_classes != index.train.num_classes || other.tokens != index.train.tokens ||
        other.tokenizer != index.train.tokenizer || other.vocabulary != index.train.vocabulary)
      throw bad_input(other.shards.front().path + ": samples or labels differ from the train split's (" +
                      index.train.shards.front().path + ")");
  }
  return index;
}

namespace {
bool finite_half(std::uint16_t h) { return (h & 0x7C00u) != 0x7C00u; }
}  // namespace

std::string check_values(const SplitIndex& split, std::size_t first, std::size_t last) {
  if (split.tokens) return check_token_values(split, first, last);
  std::lock_guard<std::mutex> lock(h5::lock());
  const std::int64_t elems = split.sample_elems();
  for (std::size_t i = first; i < last && i < split.shards.size(); ++i) {
    const Shard& s = split.shards[i];
    h5::Id file = h5::open_file(s.path);
    h5::Id samples(CHECK_H5(H5Dopen2(file.get(), "samples", H5P_DEFAULT)));
    h5::Id labels(CHECK_H5(H5Dopen2(file.get(), "labels", H5P_DEFAULT)));
    const std::int64_t block =
        std::max<std::int64_t>(1, (std::int64_t{32} << 20) / std::max<std::int64_t>(1, split.sample_bytes()));
    std::vector<float> f32;
    std::vector<std::uint16_t> f16;
    std::vector<std::int64_t> cls;
    std::vector<float> tgt;
    for (std::int64_t r = 0; r < s.rows; r += block) {
      const std::int64_t n = std::min(block, s.rows - r);
      const auto count = static_cast<std::size_t>(n * elems);
      if (split.sample_type == SampleType::f32) {
        f32.resize(count);
        h5::read_rows(samples.get(), H5T_NATIVE_FLOAT, static_cast<hsize_t>(r), static_cast<hsize_t>(n), f32.data());
        for (std::size_t k = 0; k < count; ++k)
          if (!std::isfinite(f32[k]))
            return s.path + ": /samples row " + std::to_string(r + static_cast<std::int64_t>(k) / elems) +
                   " holds NaN or Inf";
      } else if (split.sample_type == SampleType::f16) {
        f16.resize(count);
        h5::Id half;
        h5::read_rows(samples.get(), raw_sample_type(samples.get(), SampleType::f16, &half), static_cast<hsize_t>(r),
                      static_cast<hsize_t>(n), f16.data());
        for (std::size_t k = 0; k < count; ++k)
          if (!finite_half(f16[k]))
            return s.path + ": /samples row " + std::to_string(r + static_cast<std::int64_t>(k) / elems) +
                   " holds NaN or Inf";
      }
      if (split.classification) {
        cls.resize(static_cast<std::size_t>(n));
        h5::read_rows(labels.get(), H5T_NATIVE_INT64, static_cast<hsize_t>(r), static_cast<hsize_t>(n), cls.data());
        for (std::int64_t k = 0; k < n; ++k) {
          const std::int64_t c = cls[static_cast<std::size_t>(k)];
          if (c < 0 || c >= split.num_classes)
            return s.path + ": /labels row " + std::to_string(r + k) + " has class " + std::to_string(c) +
                   ", outside [0, num_classes = " + std::to_string(split.num_classes) + ")";
        }
      } else {
        tgt.resize(static_cast<std::size_t>(n * split.label_width));
        h5::read_rows(labels.get(), H5T_NATIVE_FLOAT, static_cast<hsize_t>(r), static_cast<hsize_t>(n), tgt.data());
        for (std::size_t k = 0; k < tgt.size(); ++k)
          if (!std::isfinite(tgt[k]))
            return s.path + ": /labels row " + std::to_string(r + static_cast<std::int64_t>(k) / split.label_width) +
                   " holds NaN or Inf";
      }
    }
  }
  return "";
}

std::string describe_splits(const DatasetIndex& index) {
  Table t({"split", "shards", "samples", "sample shape", "dtype", "labels", "num_classes", "x = raw*scale + offset"});
  for (const SplitIndex* s : {&index.train, index.val ? &*index.val : nullptr, index.test ? &*index.test : nullptr}) {
    if (!s) continue;
    std::ostringstream norm, shape;
    norm.precision(6);
    for (std::size_t c = 0; c < s->scale.size(); ++c) norm << (c ? "; " : "") << s->scale[c] << ", " << s->offset[c];
    shape << "[";
    for (std::size_t i = 0; i < s->sample_shape.size(); ++i) shape << (i ? "x" : "") << s->sample_shape[i];
    shape << "]";
    if (s->tokens) {  // samples: windows once [model] block_size is applied, else the stream's tokens
      const std::string bits = "uint" + std::to_string(s->token_bits);
      t.add_row({s->name, std::to_string(s->shards.size()),
                 s->block_size ? std::to_string(s->total) + " windows" : std::to_string(s->total) + " tokens",
                 s->block_size ? "[" + std::to_string(s->block_size) + "]" : "stream", bits,
                 "next token (" + s->tokenizer + ")", std::to_string(s->num_classes),
                 s->max_id >= 0 ? "ids 0.." + std::to_string(s->max_id) + " (max_token_id)" : "token ids"});
      continue;
    }
    t.add_row({s->name, std::to_string(s->shards.size()), std::to_string(s->total), shape.str(),
               to_string(s->sample_type), s->classification ? "class" : "targets x" + std::to_string(s->label_width),
               std::to_string(s->num_classes), norm.str()});
  }
  return t.render();
}

DatasetIndex scan_dataset(const DataConfig& data) {
  const bool llmc = data.format == DataFormat::llmc || (data.format == DataFormat::auto_ && looks_like_llmc(data));
  return llmc ? scan_llmc_dataset(data) : scan_dataset(data.path);
}

DatasetIndex load_dataset_index(Communicator& comm, const std::string& root, std::int64_t block_size) {
  DataConfig data;
  data.path = root;
  return load_dataset_index(comm, data, block_size);
}

DatasetIndex load_dataset_index(Communicator& comm, const DataConfig& data, std::int64_t block_size) {
  const int rank = comm.rank(), size = comm.size();
  DatasetIndex index = deserialize_dataset_index(
      compute_on_root(comm, [&] { return std::vector<std::string>{serialize(scan_dataset(data))}; })[0]);

  // Values: every rank checks every size-th shard of each split.
  std::string problem;
  try {
    for (const SplitIndex* s : {&index.train, index.val ? &*index.val : nullptr, index.test ? &*index.test : nullptr}) {
      if (!s) continue;
      // a token split larger than the cache is streamed: its ids are checked as blocks are read
      if (s->tokens && node_cache_bytes(*s) > data.cache_bytes) continue;
      for (std::size_t i = static_cast<std::size_t>(rank); i < s->shards.size() && problem.empty();
           i += static_cast<std::size_t>(size))
        problem = check_values(*s, i, i + 1);
    }
  } catch (const Error& e) {
    problem = e.what();
  }
  raise_if_any(comm, problem);
  set_block_size(index, block_size);  // the same on every rank: any error is raised by all
  index.train.windows = data.windows;
  return index;
}

}  // namespace hpctrain
