// hpctrain-data: make and inspect datasets in hpctrain's layout (README "Datasets").
//   hpctrain-data import-idx --images F --labels F --out ROOT [--split train] [--val-count N]
//                            [--limit N] [--shards K] [--chunk-rows R] [--gzip L] [--mean M --std S] [--force]
//   hpctrain-data generate   --out ROOT [--shape 1x28x28] [--classes 10] [--train N] [--val N] [--test N]
//                            [--shards K] [--dtype uint8|float16|float32] [--seed S] [--chunk-rows R] [--gzip L]
//   hpctrain-data inspect ROOT
// Errors are one line and exit code 2, like the trainer's.
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>

#include "hpctrain/core/error.hpp"
#include "hpctrain/core/table.hpp"
#include "hpctrain/data/dataset.hpp"
#include "hpctrain/data/idx.hpp"
#include "hpctrain/data/shard_writer.hpp"
#include "hpctrain/data/synthetic.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;
using namespace hpctrain;

namespace {

const char* kUsage =
    "usage: hpctrain-data import-idx --images F --labels F --out ROOT [--split train|val|test] [--val-count N]\n"
    "                                [--limit N] [--shards K] [--chunk-rows R] [--gzip L] [--mean M --std S] "
    "[--force]\n"
    "       hpctrain-data generate --out ROOT [--shape 1x28x28] [--classes 10] [--train N] [--val N] [--test N]\n"
    "                              [--shards K] [--dtype uint8|float16|float32] [--seed S] [--chunk-rows R] [--gzip "
    "L]\n"
    "       hpctrain-data inspect ROOT\n";

void prepare_split_dir(const fs::path& dir, bool force) {
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".h5") continue;
    if (!force) throw bad_input(dir.string() + " already holds shards; remove them or pass --force");
    fs::remove(e.path());
  }
}

std::string shard_name(const fs::path& dir, int i) {
  char name[32];
  std::snprintf(name, sizeof(name), "part-%05d.h5", i);
  return (dir / name).string();
}

// Writes rows [0, n) produced by `fill(first, count, samples, labels)` into `shards` shards of dir.
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
    ShardWriter w(shard_name(dir, s), spec, rows);
    for (std::int64_t r = 0; r < rows; r += block) {
      const std::int64_t count = std::min(block, rows - r);
      samples.resize(static_cast<std::size_t>(count * sample_bytes));
      labels.resize(static_cast<std::size_t>(count));
      fill(first + r, count, samples.data(), labels.data());
      w.append(count, samples.data(), labels.data());
    }
    w.close();
  }
  std::cout << "wrote " << n << " samples to " << dir.string() << " (" << (n + per - 1) / per << " shard(s))\n";
}

int import_idx(const po::variables_map& vm) {
  const IdxArray images = read_idx(vm["images"].as<std::string>());
  const IdxArray labels = read_idx(vm["labels"].as<std::string>());
  const std::string images_path = vm["images"].as<std::string>();
  if (images.dims.size() < 2) throw bad_input(images_path + ": expected an image file (2 or more dimensions)");
  if (labels.dims.size() != 1)
    throw bad_input(vm["labels"].as<std::string>() + ": expected a label file (1 dimension)");
  if (images.dims[0] != labels.dims[0])
    throw bad_input(images_path + ": " + std::to_string(images.dims[0]) + " images but " +
                    std::to_string(labels.dims[0]) + " labels");
  std::int64_t n = images.dims[0];
  if (vm.count("limit")) n = std::min(n, vm["limit"].as<std::int64_t>());
  const std::int64_t val = vm.count("val-count") ? vm["val-count"].as<std::int64_t>() : 0;
  if (val < 0 || val >= n)
    throw bad_input("--val-count " + std::to_string(val) + " must be in [0, " + std::to_string(n) + ")");

  ShardSpec spec;
  spec.sample_shape.assign(images.dims.begin() + 1, images.dims.end());
  spec.type = SampleType::u8;
  std::int32_t max_label = 0;
  for (std::int64_t i = 0; i < n; ++i)
    max_label = std::max<std::int32_t>(max_label, labels.data[static_cast<std::size_t>(i)]);
  spec.num_classes = std::max<std::int64_t>(10, max_label + 1);
  if (vm.count("mean") || vm.count("std")) {
    if (!vm.count("mean") || !vm.count("std")) throw bad_input("--mean and --std go together");
    spec.standardize = true;
    spec.norm_a = {vm["mean"].as<double>()};
    spec.norm_b = {vm["std"].as<double>()};
  }
  spec.chunk_rows = vm["chunk-rows"].as<std::int64_t>();
  spec.gzip = vm["gzip"].as<int>();
  const std::int64_t sample_bytes = static_cast<std::int64_t>(images.data.size()) / images.dims[0];
  auto fill_from = [&](std::int64_t offset) {
    return [&, offset](std::int64_t first, std::int64_t count, unsigned char* s, std::int32_t* l) {
      std::memcpy(s, images.data.data() + (offset + first) * sample_bytes,
                  static_cast<std::size_t>(count * sample_bytes));
      for (std::int64_t i = 0; i < count; ++i) l[i] = labels.data[static_cast<std::size_t>(offset + first + i)];
    };
  };
  const fs::path root = vm["out"].as<std::string>();
  const std::string split = vm["split"].as<std::string>();
  const int shards = vm["shards"].as<int>();
  const bool force = vm.count("force") > 0;
  prepare_split_dir(root / split, force);
  write_split(root / split, spec, n - val, shards, fill_from(0));
  if (val > 0) {
    prepare_split_dir(root / "val", force);
    write_split(root / "val", spec, val, std::max(1, static_cast<int>(shards * val / n)), fill_from(n - val));
  }
  return 0;
}

std::vector<std::int64_t> parse_shape(const std::string& text) {
  std::vector<std::int64_t> shape;
  std::stringstream ss(text);
  for (std::string part; std::getline(ss, part, 'x');) {
    try {
      shape.push_back(std::stoll(part));
    } catch (const std::exception&) {
      throw bad_input("--shape '" + text + "': expected dimensions like 3x32x32");
    }
    if (shape.back() < 1) throw bad_input("--shape '" + text + "': dimensions must be >= 1");
  }
  if (shape.empty()) throw bad_input("--shape is empty");
  return shape;
}

int generate(const po::variables_map& vm) {
  SyntheticSpec syn;
  syn.sample_shape = parse_shape(vm["shape"].as<std::string>());
  syn.num_classes = vm["classes"].as<std::int64_t>();
  syn.seed = vm["seed"].as<std::uint64_t>();
  const std::string dtype = vm["dtype"].as<std::string>();
  if (dtype == "uint8")
    syn.type = SampleType::u8;
  else if (dtype == "float16")
    syn.type = SampleType::f16;
  else if (dtype == "float32")
    syn.type = SampleType::f32;
  else
    throw bad_input("--dtype '" + dtype + "': expected uint8, float16 or float32");
  ShardSpec spec;
  spec.sample_shape = syn.sample_shape;
  spec.type = syn.type;
  spec.num_classes = syn.num_classes;
  if (syn.type == SampleType::u8)
    spec.norm_a = {1.0 / 127.5}, spec.norm_b = {-1.0};
  else
    spec.norm_a = {1.0}, spec.norm_b = {0.0};
  spec.chunk_rows = vm["chunk-rows"].as<std::int64_t>();
  spec.gzip = vm["gzip"].as<int>();
  const fs::path root = vm["out"].as<std::string>();
  const int shards = vm["shards"].as<int>();
  std::int64_t offset = 0;  // val and test samples continue the index space, so they are distinct
  for (const char* split : {"train", "val", "test"}) {
    const std::int64_t n = vm[split].as<std::int64_t>();
    if (n <= 0) continue;
    prepare_split_dir(root / split, vm.count("force") > 0);
    std::int64_t sample_bytes = static_cast<std::int64_t>(sample_type_size(syn.type));
    for (auto d : syn.sample_shape) sample_bytes *= d;
    write_split(root / split, spec, n, std::string(split) == "train" ? shards : std::max(1, shards / 4),
                [&, offset](std::int64_t first, std::int64_t count, unsigned char* s, std::int32_t* l) {
                  for (std::int64_t i = 0; i < count; ++i) {
                    synthetic_sample(syn, offset + first + i, s + i * sample_bytes);
                    l[i] = synthetic_label(syn, offset + first + i);
                  }
                });
    offset += n;
  }
  return 0;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? "x" : "") + std::to_string(shape[i]);
  return out + "]";
}

int inspect(const std::string& root) {
  const DatasetIndex index = scan_dataset(root);
  std::cout << "dataset " << root << " (" << kDatasetFormat << " version " << kDatasetVersion << ")\n\n";
  Table splits(
      {"split", "shards", "samples", "sample shape", "dtype", "labels", "num_classes", "x = raw*scale + offset"});
  Table files({"file", "samples", "first", "chunk rows", "compression"});
  std::map<std::int64_t, std::map<std::string, std::int64_t>> histogram;
  std::string problems;
  for (const SplitIndex* s : {&index.train, index.val ? &*index.val : nullptr, index.test ? &*index.test : nullptr}) {
    if (!s) continue;
    std::ostringstream norm;
    norm.precision(6);
    for (std::size_t c = 0; c < s->scale.size(); ++c) norm << (c ? "; " : "") << s->scale[c] << ", " << s->offset[c];
    splits.add_row({s->name, std::to_string(s->shards.size()), std::to_string(s->total), shape_text(s->sample_shape),
                    to_string(s->sample_type),
                    s->classification ? "class" : "targets x" + std::to_string(s->label_width),
                    std::to_string(s->num_classes), norm.str()});
    for (const auto& sh : s->shards) {
      files.add_row(
          {sh.path, std::to_string(sh.rows), std::to_string(sh.first), std::to_string(sh.chunk_rows), sh.compression});
      if (!s->classification) continue;
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
  std::cout << splits.render() << "\n" << files.render();
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
  std::cout << "\nvalues checked: no NaN/Inf samples, every label in range\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  try {
    if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
      std::cout << kUsage;
      return argc < 2 ? 2 : 0;
    }
    const std::string cmd = argv[1];
    po::options_description o;
    o.add_options()("images", po::value<std::string>())("labels", po::value<std::string>())(
        "out", po::value<std::string>())("split", po::value<std::string>()->default_value("train"))(
        "val-count", po::value<std::int64_t>())("limit", po::value<std::int64_t>())(
        "shards", po::value<int>()->default_value(1))("chunk-rows", po::value<std::int64_t>()->default_value(256))(
        "gzip", po::value<int>()->default_value(4))("mean", po::value<double>())("std", po::value<double>())(
        "shape", po::value<std::string>()->default_value("1x28x28"))("classes",
                                                                     po::value<std::int64_t>()->default_value(10))(
        "train", po::value<std::int64_t>()->default_value(10000))("val", po::value<std::int64_t>()->default_value(0))(
        "test", po::value<std::int64_t>()->default_value(0))("dtype", po::value<std::string>()->default_value("uint8"))(
        "seed", po::value<std::uint64_t>()->default_value(1))("force", "replace existing shards")(
        "root", po::value<std::string>());
    po::positional_options_description pos;
    pos.add("root", 1);
    po::variables_map vm;
    try {
      po::store(po::command_line_parser(argc - 1, argv + 1).options(o).positional(pos).run(), vm);
    } catch (const po::error& e) {
      throw bad_input(std::string(e.what()) + "\n" + kUsage);
    }
    auto need = [&](const char* k) {
      if (!vm.count(k)) throw bad_input(cmd + ": --" + k + " is required");
    };
    if (vm["shards"].as<int>() < 1) throw bad_input("--shards must be >= 1");
    if (vm["chunk-rows"].as<std::int64_t>() < 1) throw bad_input("--chunk-rows must be >= 1");
    const int gz = vm["gzip"].as<int>();
    if (gz < 0 || gz > 9) throw bad_input("--gzip must be 0..9");
    if (cmd == "import-idx") {
      need("images");
      need("labels");
      need("out");
      const std::string split = vm["split"].as<std::string>();
      if (split != "train" && split != "val" && split != "test") throw bad_input("--split must be train, val or test");
      return import_idx(vm);
    }
    if (cmd == "generate") {
      need("out");
      return generate(vm);
    }
    if (cmd == "inspect") {
      need("root");
      return inspect(vm["root"].as<std::string>());
    }
    throw bad_input("unknown command '" + cmd + "'\n" + kUsage);
  } catch (const Error& e) {
    std::cerr << "hpctrain-data: error: " << e.what() << "\n";
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::cerr << "hpctrain-data: error: " << e.what() << "\n";
    return 1;
  }
}
