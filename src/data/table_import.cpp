// CSV and NumPy importers (data/table_import.hpp).
#include "hpctrain/data/table_import.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "hpctrain/core/error.hpp"
#include "hpctrain/data/make_dataset.hpp"
#include "hpctrain/data/permutation.hpp"
#include "hpctrain/data/shard_writer.hpp"

namespace fs = std::filesystem;

namespace hpctrain {

std::int64_t TableData::rows() const {
  std::int64_t per = 1;
  for (auto d : sample_shape) per *= d;
  return per > 0 ? static_cast<std::int64_t>(x.size()) / per : 0;
}

namespace {

// One CSV record's fields: commas separate, double quotes enclose (a doubled quote is one quote).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else if (c != '\r') {
      out.back() += c;
    }
  }
  for (auto& f : out) {  // (surrounding blanks are not part of a number or a name)
    f.erase(0, f.find_first_not_of(" \t"));
    f.erase(f.find_last_not_of(" \t") + 1);
  }
  return out;
}

bool parse_number(const std::string& text, double& v) {
  if (text.empty()) return false;
  char* end = nullptr;
  v = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && std::isfinite(v);
}

}  // namespace

std::vector<std::string> number_classes(const std::vector<std::string>& labels, const std::string& where,
                                        std::vector<std::int32_t>& ids) {
  bool integers = true;
  for (const auto& l : labels) {
    double v = 0;
    integers = integers && parse_number(l, v) && v >= 0 && v == std::floor(v) && v < 2147483647.0;
  }
  ids.clear();
  if (integers) {
    for (const auto& l : labels) ids.push_back(static_cast<std::int32_t>(std::stod(l)));
    return {};
  }
  const std::set<std::string> distinct(labels.begin(), labels.end());
  if (distinct.count("")) throw bad_input(where + ": a row has an empty label");
  const std::vector<std::string> names(distinct.begin(), distinct.end());
  for (const auto& l : labels)
    ids.push_back(static_cast<std::int32_t>(std::lower_bound(names.begin(), names.end(), l) - names.begin()));
  return names;
}

SplitRows split_rows(std::int64_t n, double val_fraction, double test_fraction, std::uint64_t seed,
                     const std::string& what) {
  if (val_fraction < 0 || test_fraction < 0 || val_fraction + test_fraction >= 1)
    throw bad_input("--val-fraction and --test-fraction must be >= 0 and leave " + what + " to train on");
  const auto val = static_cast<std::int64_t>(std::floor(val_fraction * static_cast<double>(n)));
  const auto test = static_cast<std::int64_t>(std::floor(test_fraction * static_cast<double>(n)));
  if (n - val - test < 1) throw bad_input(std::to_string(n) + " " + what + " are too few to split");
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if (seed) {
    const Permutation perm(static_cast<std::uint64_t>(n), seed);
    for (std::int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(perm(i));
  }
  const auto at = [&](std::int64_t k) { return order.begin() + k; };
  return {{at(0), at(n - val - test)}, {at(n - val - test), at(n - test)}, {at(n - test), at(n)}};
}

ImportProgress::ImportProgress(const std::vector<SplitShard>& plan, int rank, int ranks,
                               std::function<void(std::int64_t, std::int64_t, double)> report)
    : rank_(rank), ranks_(ranks), report_(std::move(report)), start_(std::chrono::steady_clock::now()), last_(start_) {
  for (std::size_t k = 0; k < plan.size(); ++k)
    if (mine(k)) total_ += static_cast<std::int64_t>(plan[k].rows.size());
}

void ImportProgress::tick() {
  ++done_;
  const auto now = std::chrono::steady_clock::now();
  if (report_ && (now - last_ > std::chrono::seconds(2) || done_ == total_)) {
    report_(done_, total_, std::chrono::duration<double>(now - start_).count());
    last_ = now;
  }
}

std::vector<SplitShard> plan_split_shards(std::int64_t n, double val_fraction, double test_fraction, std::uint64_t seed,
                                          const std::string& what, int train_shards, int other_shards) {
  const SplitRows split = split_rows(n, val_fraction, test_fraction, seed, what);
  std::vector<SplitShard> plan;
  auto add = [&](const char* name, const std::vector<std::int64_t>& rows, int shards) {
    const auto count = static_cast<std::int64_t>(rows.size());
    const std::int64_t per = (count + shards - 1) / shards;
    for (int s = 0; s * per < count; ++s)
      plan.push_back({name, s, {rows.begin() + s * per, rows.begin() + std::min(count, (s + 1) * per)}});
  };
  add("train", split.train, std::max(1, train_shards));
  add("val", split.val, std::max(1, other_shards));
  add("test", split.test, std::max(1, other_shards));
  return plan;
}

TableData read_csv(const CsvOptions& o) {
  std::ifstream in(o.path);
  if (!in) throw bad_input(o.path + ": cannot open");
  std::string line;
  if (!std::getline(in, line)) throw bad_input(o.path + ": empty file (expected a header row of column names)");
  const auto header = csv_fields(line);
  std::vector<std::size_t> label_at;
  for (const auto& name : o.label_columns.empty() ? std::vector<std::string>{header.back()} : o.label_columns) {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) throw bad_input(o.path + ": no column '" + name + "' in the header (" + line + ")");
    label_at.push_back(static_cast<std::size_t>(it - header.begin()));
  }
  if (!o.regression && label_at.size() != 1) throw bad_input(o.path + ": classification takes one --label column");
  if (label_at.size() >= header.size()) throw bad_input(o.path + ": no feature columns besides the label");
  TableData d;
  d.sample_shape = {static_cast<std::int64_t>(header.size() - label_at.size())};
  d.target_width = o.regression ? static_cast<std::int64_t>(label_at.size()) : 0;
  std::vector<std::string> labels;
  for (std::int64_t n = 2; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto f = csv_fields(line);
    const std::string where = o.path + ":" + std::to_string(n);
    if (f.size() != header.size())
      throw bad_input(where + ": " + std::to_string(f.size()) + " fields, the header has " +
                      std::to_string(header.size()));
    for (std::size_t c = 0; c < f.size(); ++c) {
      const bool is_label = std::find(label_at.begin(), label_at.end(), c) != label_at.end();
      if (is_label && !o.regression) {
        labels.push_back(f[c]);
        continue;
      }
      double v = 0;
      if (!parse_number(f[c], v))
        throw bad_input(where + ": column '" + header[c] + "' holds '" + f[c] + "', not a finite number");
      (is_label ? d.targets : d.x).push_back(static_cast<float>(v));
    }
  }
  if (d.rows() == 0) throw bad_input(o.path + ": no data rows after the header");
  if (!o.regression) {
    d.class_names = number_classes(labels, o.path, d.classes);
    d.num_classes = d.classes.empty() ? 0 : *std::max_element(d.classes.begin(), d.classes.end()) + 1;
  }
  return d;
}

namespace {

struct NpyArray {
  std::vector<std::int64_t> shape;
  std::vector<double> values;
  bool integer = false;
};

// One little-endian element of type T (this is a little-endian host) as a double.
template <class T>
double load_as(const unsigned char* p) {
  T t;
  std::memcpy(&t, p, sizeof t);
  return static_cast<double>(t);
}

// The sizes of a .npy header's shape, "(3, 4)" or "(3,)": each a whole number, their product's
// bytes within the `available` bytes after the header (bad_input naming `path` otherwise, before
// anything is allocated: a header can claim any size).
std::vector<std::int64_t> npy_shape(const std::string& text, int element_size, std::uint64_t available,
                                    const std::string& path) {
  const auto open = text.find('('), close = text.find(')');
  if (open == std::string::npos || close == std::string::npos || close < open)
    throw bad_input(path + ": .npy header's shape is not a tuple");
  std::vector<std::int64_t> shape;
  std::stringstream ss(text.substr(open + 1, close - open - 1));
  std::uint64_t bytes = static_cast<std::uint64_t>(element_size);
  for (std::string part; std::getline(ss, part, ',');) {
    const auto first = part.find_first_not_of(' '), last = part.find_last_not_of(' ');
    if (first == std::string::npos) continue;  // (the comma after a 1-tuple's size)
    const std::string digits = part.substr(first, last - first + 1);
    if (digits.size() > 15 || digits.find_first_not_of("0123456789") != std::string::npos)
      throw bad_input(path + ": .npy header's shape has '" + digits.substr(0, 20) + "', not a size");
    shape.push_back(std::stoll(digits));
    const auto d = static_cast<std::uint64_t>(shape.back());
    if (d != 0 && bytes > available / d)
      throw bad_input(path + ": the header's shape " + text.substr(open, close - open + 1) + " needs more than the " +
                      std::to_string(available) + " data bytes the file holds");
    bytes *= d;
  }
  if (shape.empty()) throw bad_input(path + ": a 0-dimensional array (expected rows)");
  return shape;
}

// A .npy file (format versions 1-3; little-endian or byte-sized types; C order).
NpyArray read_npy_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw bad_input(path + ": cannot open");
  const auto file_size = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  char magic[8] = {};
  in.read(magic, 8);
  if (!in || std::memcmp(magic, "\x93NUMPY", 6) != 0) throw bad_input(path + ": not a .npy file (no \\x93NUMPY magic)");
  if (magic[6] < 1 || magic[6] > 3)
    throw bad_input(path + ": .npy format version " + std::to_string(magic[6]) + " (hpctrain reads 1 to 3)");
  const std::uint64_t length_bytes = magic[6] == 1 ? 2 : 4;
  unsigned char b[4] = {};
  in.read(reinterpret_cast<char*>(b), static_cast<std::streamsize>(length_bytes));
  const std::uint32_t len =
      b[0] | (b[1] << 8) | (magic[6] == 1 ? 0u : (static_cast<std::uint32_t>(b[2]) << 16 | b[3] << 24));
  if (!in || len > file_size - std::min(file_size, 8 + length_bytes))
    throw bad_input(path + ": .npy header of " + std::to_string(len) + " bytes runs past the file's end");
  std::string header(len, '\0');
  in.read(header.data(), len);
  auto field = [&](const std::string& key) {
    const auto at = header.find("'" + key + "'");
    if (at == std::string::npos || header.find(':', at) == std::string::npos)
      throw bad_input(path + ": .npy header lacks '" + key + "'");
    return header.substr(header.find(':', at) + 1);
  };
  if (field("fortran_order").find("True") < field("fortran_order").find(','))
    throw bad_input(path + ": Fortran-ordered array; save it with numpy.ascontiguousarray first");
  const std::string descr = field("descr").substr(field("descr").find('\'') + 1, 3);
  struct Type {
    int size;
    bool integer;
    double (*load)(const unsigned char*);
  };
  static const std::map<std::string, Type> types = {
      {"<f4", {4, false, load_as<float>}},       {"<f8", {8, false, load_as<double>}},
      {"|u1", {1, true, load_as<std::uint8_t>}}, {"|i1", {1, true, load_as<std::int8_t>}},
      {"<i2", {2, true, load_as<std::int16_t>}}, {"<u2", {2, true, load_as<std::uint16_t>}},
      {"<i4", {4, true, load_as<std::int32_t>}}, {"<u4", {4, true, load_as<std::uint32_t>}},
      {"<i8", {8, true, load_as<std::int64_t>}}, {"<u8", {8, true, load_as<std::uint64_t>}}};
  const auto type = types.find(descr);
  if (type == types.end()) throw bad_input(path + ": dtype '" + descr + "' not supported (float32/64, integers)");
  NpyArray a;
  a.integer = type->second.integer;
  const int size = type->second.size;
  a.shape = npy_shape(field("shape"), size, file_size - (8 + length_bytes + len), path);
  std::int64_t n = 1;
  for (auto d : a.shape) n *= d;
  std::vector<unsigned char> raw(static_cast<std::size_t>(n * size));
  in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size()));
  if (in.gcount() != static_cast<std::streamsize>(raw.size()))
    throw bad_input(path + ": " + std::to_string(in.gcount()) + " data bytes, the header's shape needs " +
                    std::to_string(raw.size()));
  a.values.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = type->second.load(raw.data() + i * size);
    if (!std::isfinite(v)) throw bad_input(path + ": element " + std::to_string(i) + " is NaN or Inf");
    a.values[static_cast<std::size_t>(i)] = v;
  }
  return a;
}

}  // namespace

constexpr double kMaxClasses = 1 << 24;

TableData read_npy(const std::string& features, const std::string& labels) {
  const NpyArray x = read_npy_file(features), y = read_npy_file(labels);
  if (x.shape[0] != y.shape[0])
    throw bad_input(features + " has " + std::to_string(x.shape[0]) + " rows but " + labels + " has " +
                    std::to_string(y.shape[0]));
  if (y.shape.size() > 2) throw bad_input(labels + ": expected [N] classes or [N] / [N, k] targets");
  if (x.shape[0] == 0) throw bad_input(features + ": no rows");
  TableData d;
  d.sample_shape.assign(x.shape.begin() + 1, x.shape.end());
  if (d.sample_shape.empty()) d.sample_shape = {1};
  d.x.assign(x.values.begin(), x.values.end());
  if (y.integer && y.shape.size() == 1) {
    for (double v : y.values) {  // (classes index a model's outputs: 2^24 of them at most)
      if (v < 0 || v >= kMaxClasses) {
        char text[32];  // (any int64 or uint64 value, as a double: no conversion to an integer type)
        std::snprintf(text, sizeof text, "%.0f", v);
        throw bad_input(labels + ": a class " + text + " outside 0.." +
                        std::to_string(static_cast<long long>(kMaxClasses) - 1));
      }
      d.classes.push_back(static_cast<std::int32_t>(v));
    }
    d.num_classes = *std::max_element(d.classes.begin(), d.classes.end()) + 1;
  } else {
    d.target_width = y.shape.size() == 2 ? y.shape[1] : 1;
    d.targets.assign(y.values.begin(), y.values.end());
  }
  return d;
}

namespace {

// Mean and std (population) of the training rows: per feature of [F] samples, else of all values.
void standardization(const TableData& d, const std::vector<std::int64_t>& train_rows, std::vector<double>& mean,
                     std::vector<double>& sd) {
  const std::int64_t per = static_cast<std::int64_t>(d.x.size()) / d.rows();
  const std::int64_t groups = d.sample_shape.size() == 1 ? per : 1, width = per / groups;
  mean.assign(static_cast<std::size_t>(groups), 0);
  sd.assign(static_cast<std::size_t>(groups), 0);
  const double count = static_cast<double>(train_rows.size() * width);
  for (int pass = 0; pass < 2; ++pass)
    for (std::int64_t r : train_rows)
      for (std::int64_t k = 0; k < per; ++k) {
        const auto g = static_cast<std::size_t>(k / width);
        const double v = d.x[static_cast<std::size_t>(r * per + k)];
        if (pass == 0)
          mean[g] += v / count;
        else
          sd[g] += (v - mean[g]) * (v - mean[g]) / count;
      }
  for (auto& s : sd) s = s > 0 ? std::sqrt(s) : 1.0;  // (a constant feature: left as it is, centred)
}

void write_rows(const fs::path& dir, const ShardSpec& spec, const TableData& d, const std::vector<std::int64_t>& rows,
                int shards) {
  const std::int64_t per = static_cast<std::int64_t>(d.x.size()) / d.rows(), n = static_cast<std::int64_t>(rows.size());
  const std::int64_t per_shard = (n + shards - 1) / shards;
  for (int s = 0; s * per_shard < n; ++s) {
    const std::int64_t first = s * per_shard, count = std::min(per_shard, n - first);
    std::vector<float> x, targets;
    std::vector<std::int32_t> classes;
    for (std::int64_t i = first; i < first + count; ++i) {
      const auto r = static_cast<std::size_t>(rows[static_cast<std::size_t>(i)]);
      x.insert(x.end(), d.x.begin() + static_cast<std::ptrdiff_t>(r * per),
               d.x.begin() + static_cast<std::ptrdiff_t>((r + 1) * per));
      if (d.target_width)
        targets.insert(targets.end(), d.targets.begin() + static_cast<std::ptrdiff_t>(r * d.target_width),
                       d.targets.begin() + static_cast<std::ptrdiff_t>((r + 1) * d.target_width));
      else
        classes.push_back(d.classes[r]);
    }
    char name[32];
    std::snprintf(name, sizeof(name), "part-%05d.h5", s);
    ShardWriter w((dir / name).string(), spec, count);
    w.append(count, x.data(), d.target_width ? static_cast<const void*>(targets.data()) : classes.data());
    w.close();
  }
}

}  // namespace

TableImportResult write_table_dataset(const TableData& d, const TableImportOptions& o) {
  const SplitRows split = split_rows(d.rows(), o.val_fraction, o.test_fraction, o.shuffle_seed, "rows");
  const TableImportResult r{static_cast<std::int64_t>(split.train.size()), static_cast<std::int64_t>(split.val.size()),
                            static_cast<std::int64_t>(split.test.size())};
  ShardSpec spec;
  spec.sample_shape = d.sample_shape;
  spec.type = SampleType::f32;
  spec.classification = d.target_width == 0;
  spec.label_width = std::max<std::int64_t>(1, d.target_width);
  spec.num_classes = spec.classification ? std::max<std::int64_t>(1, d.num_classes) : 0;
  spec.chunk_rows = o.chunk_rows;
  spec.gzip = o.gzip;
  if (o.standardize) {
    spec.standardize = true;
    standardization(d, split.train, spec.norm_a, spec.norm_b);
  } else {
    spec.norm_a = {1.0};
    spec.norm_b = {0.0};
  }
  const fs::path root = o.out;
  for (const auto& [name, rows] : {std::pair<const char*, const std::vector<std::int64_t>*>{"train", &split.train},
                                   {"val", &split.val},
                                   {"test", &split.test}}) {
    if (rows->empty()) continue;
    prepare_split_dir((root / name).string(), o.force);
    write_rows(root / name, spec, d, *rows, std::string(name) == "train" ? o.shards : 1);
  }
  if (!d.class_names.empty()) {
    std::ofstream names(root / "classes.txt");
    for (const auto& c : d.class_names) names << c << "\n";
  }
  return r;
}

}  // namespace hpctrain
