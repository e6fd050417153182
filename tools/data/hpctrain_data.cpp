// hpctrain-data: make and inspect datasets in hpctrain's layout (docs/datasets.md).
//   hpctrain-data import-idx --images F --labels F --out ROOT [--split train] [--val-count N]
//                            [--limit N] [--shards K] [--chunk-rows R] [--gzip L] [--mean M --std S] [--force]
//   hpctrain-data generate   --out ROOT [--shape 1x28x28] [--classes 10] [--train N] [--val N] [--test N]
//                            [--shards K] [--dtype uint8|float16|float32] [--seed S] [--chunk-rows R] [--gzip L]
//   hpctrain-data generate --kind cosmo --out ROOT [--size 32] [--channels 1] [--train N] [--val N] [--test N]
//                            [--shards K] [--dtype float16|float32] [--seed S] [--gzip L]   (data/cosmo.hpp)
//   hpctrain-data import-text --input FILE... --out ROOT [--tokenizer char|byte|gpt2] [--val-fraction F]
//                             [--shards N] [--force]
//                             gpt2: --vocab DIR [--documents file|lines|jsonl] [--text-field text] [--threads N]
//   hpctrain-data import-llmc --input DIR --vocab DIR --out ROOT [--force]   (llm.c's .bin shards)
//   hpctrain-data import-cifar --input FILE... --out ROOT [--split train|test] [--val-count N] [--cifar100]
//   hpctrain-data import-csv --input FILE --out ROOT [--label COL[,COL...]] [--regression] [table options]
//   hpctrain-data import-npy --features X.npy --labels Y.npy --out ROOT [table options]
//   [mpirun -np N] hpctrain-data import-images --input DIR --out ROOT [--size 32] [--channels 3|1]
//                            [--labels FILE.csv] [table options but --no-standardize]
//     table options: [--val-fraction 0.1] [--test-fraction 0] [--shuffle-seed 1 (0: keep order)]
//                    [--no-standardize] [--shards K] [--force]
//   [mpirun -np N] hpctrain-data import-h5 --input 'DIR/*.h5' --out ROOT [--x full] [--y unitPar]
//                            [--layout dhwc|cdhw] [--dtype float16|float32|uint16] [--transform none|log1p]
//                            [--target-names "a, b, ..."] [table options but --no-standardize]
//   hpctrain-data inspect ROOT
//   hpctrain-data tokenize --vocab DIR|tokenizer.json --input FILE... [--documents file|lines] [--decode]
//                          [--special-tokens]
// Errors are one line and exit code 2, like the trainer's.
#include <mpi.h>

#include <array>
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>

#include "hpctrain/config/config.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/table.hpp"
#include "hpctrain/data/cosmo.hpp"
#include "hpctrain/data/dataset.hpp"
#include "hpctrain/data/image_import.hpp"
#include "hpctrain/data/llmc_shards.hpp"
#include "hpctrain/data/make_dataset.hpp"
#include "hpctrain/data/table_import.hpp"
#include "hpctrain/data/text_import.hpp"
#include "hpctrain/data/token_dataset.hpp"
#include "hpctrain/data/volume_import.hpp"
#include "inspect.hpp"

namespace po = boost::program_options;
using namespace hpctrain;

namespace {

const char* kUsage =
    "usage: hpctrain-data import-idx --images F --labels F --out ROOT [--split train|val|test] [--val-count N]\n"
    "                                [--limit N] [--shards K] [--chunk-rows R] [--gzip L] [--mean M --std S] "
    "[--force]\n"
    "       hpctrain-data generate --out ROOT [--shape 1x28x28] [--classes 10] [--train N] [--val N] [--test N]\n"
    "                              [--shards K] [--dtype uint8|float16|float32] [--seed S] [--chunk-rows R] [--gzip "
    "L]\n"
    "       hpctrain-data generate --kind cosmo --out ROOT [--size 32] [--channels 1] [--train N] [--val N] [--test "
    "N]\n"
    "                              [--shards K] [--dtype float16|float32] [--seed S] [--gzip L]\n"
    "       hpctrain-data import-text --input FILE... --out ROOT [--tokenizer char|byte|gpt2] [--val-fraction 0.1]\n"
    "                                 [--shards N] [--force]\n"
    "                                 gpt2: --vocab DIR|tokenizer.json [--documents file|lines|jsonl] [--text-field "
    "text] [--threads "
    "N]\n"
    "       hpctrain-data import-llmc --input DIR --vocab DIR --out ROOT [--force]\n"
    "       hpctrain-data import-cifar --input data_batch_*.bin --out ROOT [--split train|test] [--val-count N] "
    "[--cifar100]\n"
    "       hpctrain-data import-csv --input FILE --out ROOT [--label COLUMN[,COLUMN...]] [--regression]\n"
    "                                [--val-fraction 0.1] [--test-fraction 0] [--shuffle-seed 1] [--no-standardize]\n"
    "                                [--shards K] [--force]\n"
    "       hpctrain-data import-npy --features X.npy --labels Y.npy --out ROOT [the options of import-csv]\n"
    "       [mpirun -np N] hpctrain-data import-images --input DIR --out ROOT [--size 32] [--channels 3|1]\n"
    "                                [--labels FILE.csv] [--val-fraction 0.1] [--test-fraction 0] [--shuffle-seed 1]\n"
    "                                [--shards K] [--force]\n"
    "       [mpirun -np N] hpctrain-data import-h5 --input 'DIR/*.h5' --out ROOT [--x full] [--y unitPar]\n"
    "                                [--layout dhwc|cdhw] [--dtype float16|float32|uint16] [--transform none|log1p]\n"
    "                                [--target-names \"a, b, ...\"] [--val-fraction 0.1] [--test-fraction 0]\n"
    "                                [--shuffle-seed 1] [--shards K] [--force]\n"
    "       hpctrain-data inspect ROOT\n"
    "       hpctrain-data tokenize --vocab DIR|tokenizer.json --input FILE... [--documents file|lines] [--decode]\n"
    "                              [--special-tokens]\n";

// GPT-2's BPE on each document (a whole file, or each line without its newline): one line of ids
// per document; --decode reads lines of ids instead and writes their bytes.
int tokenize_cmd(const po::variables_map& vm) {
  const Vocabulary tok = Vocabulary::gpt2_dir(vm["vocab"].as<std::string>());  // GPT-2's files or a tokenizer.json
  const std::string mode = vm["documents"].as<std::string>();
  if (mode != "file" && mode != "lines") throw bad_input("--documents '" + mode + "': expected file or lines");
  for (const std::string& path : vm["input"].as<std::vector<std::string>>()) {
    const std::string text = read_text_file(path, "input");
    if (vm.count("decode")) {
      std::istringstream lines(text);
      for (std::string line; std::getline(lines, line);) {
        std::istringstream in(line);
        std::string bytes;  // (the whole line checked before any of it is written)
        for (long long id; in >> id;) bytes += tok.token_text(static_cast<std::uint32_t>(id));
        std::cout << bytes;
      }
      continue;
    }
    std::vector<std::string_view> docs{text};
    if (mode == "lines") {
      docs.clear();
      for (std::size_t at = 0; at < text.size();) {
        const auto end = std::min(text.find('\n', at), text.size());
        docs.push_back(std::string_view(text).substr(at, end - at));
        at = end + 1;
      }
    }
    for (std::string_view d : docs) {
      const auto ids =
          vm.count("special-tokens") ? tok.encode_prompt(std::string(d), path) : tok.encode(std::string(d), path);
      for (std::size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
      std::cout << "\n";
    }
  }
  return 0;
}

int import_cmd(const po::variables_map& vm) {
  ImportOptions o;
  o.images = vm["images"].as<std::string>();
  o.labels = vm["labels"].as<std::string>();
  o.out = vm["out"].as<std::string>();
  o.split = vm["split"].as<std::string>();
  if (vm.count("limit")) o.limit = vm["limit"].as<std::int64_t>();
  if (vm.count("val-count")) o.val_count = vm["val-count"].as<std::int64_t>();
  o.shards = vm["shards"].as<int>();
  o.chunk_rows = vm["chunk-rows"].as<std::int64_t>();
  o.gzip = vm["gzip"].as<int>();
  if (vm.count("mean") || vm.count("std")) {
    if (!vm.count("mean") || !vm.count("std")) throw bad_input("--mean and --std go together");
    o.standardize = true;
    o.mean = vm["mean"].as<double>();
    o.std = vm["std"].as<double>();
  }
  o.force = vm.count("force") > 0;
  const auto [train, val] = import_idx(o);
  std::cout << "wrote " << train << " samples to " << o.out << "/" << o.split
            << (val ? " and " + std::to_string(val) + " to " + o.out + "/val" : "") << "\n";
  return 0;
}

// CIFAR-10/100's binary version: records of label byte(s) and a [3, 32, 32] image.
int import_cifar_cmd(const po::variables_map& vm) {
  ImportOptions o;
  o.out = vm["out"].as<std::string>();
  o.split = vm["split"].as<std::string>();
  if (vm.count("val-count")) o.val_count = vm["val-count"].as<std::int64_t>();
  o.shards = vm["shards"].as<int>();
  o.chunk_rows = vm["chunk-rows"].as<std::int64_t>();
  o.gzip = vm["gzip"].as<int>();
  o.force = vm.count("force") > 0;
  const auto [n, val] = import_cifar(vm["input"].as<std::vector<std::string>>(), vm.count("cifar100") > 0, o);
  std::cout << "wrote " << n << " images to " << o.out << "/" << o.split
            << (val ? " and " + std::to_string(val) + " to " + o.out + "/val" : "") << "\n";
  return 0;
}

// A CSV (import-csv) or two .npy arrays (import-npy) as float32 shards, standardized per feature.
int import_table_cmd(const std::string& cmd, const po::variables_map& vm) {
  TableData data;
  if (cmd == "import-csv") {
    CsvOptions c;
    c.path = vm["input"].as<std::vector<std::string>>().at(0);
    if (vm.count("label")) {
      std::stringstream ss(vm["label"].as<std::string>());
      for (std::string col; std::getline(ss, col, ',');) c.label_columns.push_back(col);
    }
    c.regression = vm.count("regression") > 0;
    data = read_csv(c);
  } else {
    data = read_npy(vm["features"].as<std::string>(), vm["labels"].as<std::string>());
  }
  TableImportOptions o;
  o.out = vm["out"].as<std::string>();
  o.val_fraction = vm["val-fraction"].as<double>();
  o.test_fraction = vm["test-fraction"].as<double>();
  o.shuffle_seed = vm["shuffle-seed"].as<std::uint64_t>();
  o.standardize = vm.count("no-standardize") == 0;
  o.shards = vm["shards"].as<int>();
  o.chunk_rows = vm["chunk-rows"].as<std::int64_t>();
  o.gzip = vm["gzip"].as<int>();
  o.force = vm.count("force") > 0;
  const TableImportResult r = write_table_dataset(data, o);
  std::string shape;
  for (auto d : data.sample_shape) shape += (shape.empty() ? "" : "x") + std::to_string(d);
  std::cout << "wrote " << r.train << " train, " << r.val << " val, " << r.test << " test samples of " << shape
            << " to " << o.out << " ("
            << (data.target_width ? std::to_string(data.target_width) + " regression target(s)"
                                  : std::to_string(data.num_classes) + " classes")
            << (data.class_names.empty() ? "" : ", names in " + o.out + "/classes.txt")
            << (o.standardize ? "; standardized: mean and std of the train rows" : "") << ")\n";
  return 0;
}

// One line on rank 0 for an error every rank meets alike; on its own rank's line otherwise.
void report(const std::string& what, int rank, int ranks, bool every_rank) {
  if (every_rank && rank != 0) return;
  const bool named = !every_rank && ranks > 1;
  std::cerr << "hpctrain-data: error: " << (named ? "[rank " + std::to_string(rank) + "] " : "") << what << "\n";
}

// One step of a parallel import, unless an earlier one failed: an Error becomes its one line
// (from rank 0 when every rank would say the same), and every rank learns whether any failed.
template <typename F>
void collective_step(int& failed, int rank, int ranks, bool every_rank, F step) {
  if (!failed) try {
      step();
    } catch (const Error& e) {
      report(e.what(), rank, ranks, every_rank);
      failed = 1;
    }
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
}

// The split folders a plan writes, made ready (empty: --force removes earlier shards).
void prepare_splits(const std::string& out, const std::vector<SplitShard>& plan, bool force) {
  for (const char* split : {"train", "val", "test"})
    if (std::any_of(plan.begin(), plan.end(), [&](const SplitShard& s) { return s.split == split; }))
      prepare_split_dir(out + "/" + split, force);
}

void remove_shards(const std::string& out, const std::vector<SplitShard>& plan) {
  std::error_code ec;
  for (const SplitShard& s : plan) {
    char name[32];
    std::snprintf(name, sizeof(name), "part-%05d.h5", s.index);
    std::filesystem::remove(out + "/" + s.split + "/" + name, ec);
  }
}

// Rows per split of a plan: train, val, test.
std::array<std::int64_t, 3> split_totals(const std::vector<SplitShard>& plan) {
  std::array<std::int64_t, 3> rows{0, 0, 0};
  for (const auto& s : plan) rows[s.split == "train" ? 0 : s.split == "val" ? 1 : 2] += s.rows.size();
  return rows;
}

// One-file-per-sample HDF5 volumes (CosmoFlow's, LBANN's) as shards, read in parallel over the
// MPI ranks (shard k by rank k % N). Every file's header is checked before any shard is written;
// a file that fails later (a value not finite) removes what the import wrote.
int import_h5_cmd(const po::variables_map& vm) {
  MPI_Init(nullptr, nullptr);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  VolumeImportOptions o;
  o.inputs = vm["input"].as<std::vector<std::string>>();
  o.out = vm["out"].as<std::string>();
  o.x = vm["x"].as<std::string>();
  o.y = vm["y"].as<std::string>();
  o.val_fraction = vm["val-fraction"].as<double>();
  o.test_fraction = vm["test-fraction"].as<double>();
  o.shuffle_seed = vm["shuffle-seed"].as<std::uint64_t>();
  o.shards = std::max(vm["shards"].as<int>(), vm["shards"].defaulted() ? ranks : 1);
  o.rank = rank;
  o.ranks = ranks;
  o.force = vm.count("force") > 0;
  if (vm.count("target-names")) o.target_names = vm["target-names"].as<std::string>();
  o.progress = [&](std::int64_t done, std::int64_t total, double s) {
    if (rank == 0)
      std::fprintf(stderr, "import-h5: rank 0 wrote %lld of its %lld volumes (%d rank(s)), %.1f volumes/s\n",
                   static_cast<long long>(done), static_cast<long long>(total), ranks, static_cast<double>(done) / s);
  };
  std::vector<std::string> files;
  VolumeLayout layout;
  std::vector<SplitShard> plan;
  int failed = 0;
  collective_step(failed, rank, ranks, true, [&] {  // (the same on every rank: one line, from rank 0)
    const std::string layout_name = vm["layout"].as<std::string>(), transform = vm["transform"].as<std::string>();
    const std::string dtype = vm["dtype"].defaulted() ? "float16" : vm["dtype"].as<std::string>();
    if (layout_name != "dhwc" && layout_name != "cdhw") throw bad_input("--layout '" + layout_name + "': dhwc or cdhw");
    if (dtype != "float16" && dtype != "float32" && dtype != "uint16")
      throw bad_input("--dtype '" + dtype + "': float16, float32 or uint16 (counts, --transform applied when read)");
    if (transform != "none" && transform != "log1p") throw bad_input("--transform '" + transform + "': none or log1p");
    o.channels_last = layout_name == "dhwc";
    o.type = dtype == "float16" ? SampleType::f16 : dtype == "uint16" ? SampleType::u16 : SampleType::f32;
    o.log1p = transform == "log1p";
    files = list_volume_files(o.inputs);
    layout = probe_volume(files.front(), o);
    plan = plan_split_shards(static_cast<std::int64_t>(files.size()), o.val_fraction, o.test_fraction, o.shuffle_seed,
                             "files", o.shards, std::max(1, o.shards / 8));
  });
  collective_step(failed, rank, ranks, false, [&] {  // every file's header, a share per rank, before any write
    for (std::size_t f = static_cast<std::size_t>(rank); f < files.size(); f += static_cast<std::size_t>(ranks))
      check_volume(files[f], o, layout);
  });
  collective_step(failed, rank, ranks, true, [&] {
    if (rank == 0) prepare_splits(o.out, plan, o.force);
  });
  const bool started = !failed;
  long long written = 0;
  collective_step(failed, rank, ranks, false, [&] { written = write_volume_shards(files, layout, plan, o); });
  if (failed && started && rank == 0) remove_shards(o.out, plan);  // (the split folders were emptied for it)
  MPI_Allreduce(MPI_IN_PLACE, &written, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (!failed && rank == 0) {
    const auto rows = split_totals(plan);
    std::cout << "wrote " << rows[0] << " train, " << rows[1] << " val, " << rows[2] << " test volumes of "
              << layout.sample_shape[0] << "x" << layout.sample_shape[1] << "x" << layout.sample_shape[2] << "x"
              << layout.sample_shape[3] << " with " << layout.targets << " targets to " << o.out << " (" << written
              << " read by " << ranks << " rank(s))\n";
  }
  MPI_Finalize();
  return failed ? 2 : 0;
}

// The images of a folder as uint8 shards, decoded and resized in parallel over the MPI ranks
// (shard k by rank k % N; the dataset is the same for any N).
int import_images_cmd(const po::variables_map& vm) {
  MPI_Init(nullptr, nullptr);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  ImageImportOptions o;
  o.dir = vm["input"].as<std::vector<std::string>>().at(0);
  if (vm.count("labels")) o.labels_csv = vm["labels"].as<std::string>();
  o.out = vm["out"].as<std::string>();
  o.size = vm["size"].as<int>();
  o.channels = vm["channels"].as<int>();
  o.val_fraction = vm["val-fraction"].as<double>();
  o.test_fraction = vm["test-fraction"].as<double>();
  o.shuffle_seed = vm["shuffle-seed"].as<std::uint64_t>();
  o.shards = std::max(vm["shards"].as<int>(), vm["shards"].defaulted() ? ranks : 1);
  o.rank = rank;
  o.ranks = ranks;
  o.force = vm.count("force") > 0;
  o.progress = [&](std::int64_t done, std::int64_t total, double s) {
    if (rank == 0)
      std::fprintf(stderr, "import-images: rank 0 decoded %lld of its %lld images (%d rank(s)), %.0f images/s\n",
                   static_cast<long long>(done), static_cast<long long>(total), ranks, static_cast<double>(done) / s);
  };
  int failed = 0;
  ImageList list;
  std::vector<ImageShard> plan;
  collective_step(failed, rank, ranks, true, [&] {  // (the same on every rank: one line, from rank 0)
    if (o.size < 1 || (o.channels != 1 && o.channels != 3)) throw bad_input("--size must be >= 1, --channels 1 or 3");
    list = list_images(o.dir, o.labels_csv);
    plan = plan_image_shards(static_cast<std::int64_t>(list.images.size()), o);
    if (rank == 0) prepare_splits(o.out, plan, o.force);
  });
  long long written = 0;  // (a file that does not decode: its rank says which)
  collective_step(failed, rank, ranks, false, [&] { written = write_image_shards(list, plan, o); });
  MPI_Allreduce(MPI_IN_PLACE, &written, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (!failed && rank == 0) {
    if (!list.class_names.empty()) {
      std::ofstream names(o.out + "/classes.txt");
      for (const auto& c : list.class_names) names << c << "\n";
    }
    const auto split_rows = split_totals(plan);
    std::cout << "wrote " << split_rows[0] << " train, " << split_rows[1] << " val, " << split_rows[2]
              << " test images of " << o.channels << "x" << o.size << "x" << o.size << " to " << o.out << " ("
              << std::max<std::size_t>(list.class_names.size(), 1) << " classes"
              << (list.class_names.empty() ? "" : ", names in " + o.out + "/classes.txt") << "; " << written
              << " decoded by " << ranks << " rank(s))\n";
  }
  MPI_Finalize();
  return failed ? 2 : 0;
}

// llm.c's .bin shards (DIR/*train*.bin, DIR/*val*.bin) as hpctrain token shards with GPT-2's files.
int import_llmc_cmd(const po::variables_map& vm) {
  DataConfig data;
  data.path = vm["input"].as<std::vector<std::string>>().at(0);
  const auto [train, val] =
      convert_llmc(data, vm["vocab"].as<std::string>(), vm["out"].as<std::string>(), vm.count("force") > 0);
  std::cout << "wrote " << train << " train and " << val << " val tokens to " << vm["out"].as<std::string>()
            << " (gpt2 tokenizer, from llm.c shards in " << data.path << ")\n";
  return 0;
}

int import_text_cmd(const po::variables_map& vm) {
  TextImportOptions o;
  o.inputs = vm["input"].as<std::vector<std::string>>();
  o.out = vm["out"].as<std::string>();
  o.tokenizer = vm["tokenizer"].as<std::string>();
  o.val_fraction = vm["val-fraction"].as<double>();
  o.shards = vm["shards"].as<int>();
  o.force = vm.count("force") > 0;
  if (vm.count("vocab")) o.vocab = vm["vocab"].as<std::string>();
  o.documents = vm["documents"].as<std::string>();
  o.text_field = vm["text-field"].as<std::string>();
  o.threads = vm["threads"].as<int>();
  o.progress = [](std::int64_t done, std::int64_t total, double s) {
    const double mb = static_cast<double>(done) / 1e6;
    std::fprintf(stderr, "import-text: %.1f of %.1f MB tokenized, %.2f MB/s\n", mb, static_cast<double>(total) / 1e6,
                 mb / s);
  };
  const TextImportResult r = import_text(o);
  std::cout << "wrote " << r.train << " train tokens to " << o.out << "/train"
            << (r.val > 0 ? " and " + std::to_string(r.val) + " val tokens to " + o.out + "/val"
                          : std::string(" and no val split (--val-fraction 0)"))
            << " (" << r.tokenizer << " tokenizer, vocabulary " << r.vocab << ")\n";
  char rate[160];
  std::snprintf(rate, sizeof(rate), "%lld document(s), %.2f MB of text encoded in %.2f s (%.2f MB/s)\n",
                static_cast<long long>(r.documents), static_cast<double>(r.bytes) / 1e6, r.encode_seconds,
                static_cast<double>(r.bytes) / 1e6 / std::max(r.encode_seconds, 1e-9));
  std::cout << rate;
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

// --kind cosmo: the synthetic cosmology volumes (data/cosmo.hpp).
int generate_cosmo_cmd(const po::variables_map& vm) {
  CosmoOptions o;
  o.spec.size = vm["size"].as<int>();
  o.spec.channels = vm["channels"].defaulted() ? 1 : vm["channels"].as<int>();
  o.spec.seed = vm["seed"].as<std::uint64_t>();
  const std::string dtype = vm["dtype"].defaulted() ? "float16" : vm["dtype"].as<std::string>();
  if (dtype != "float16" && dtype != "float32") throw bad_input("--dtype '" + dtype + "': expected float16 or float32");
  o.spec.type = dtype == "float16" ? SampleType::f16 : SampleType::f32;
  o.out = vm["out"].as<std::string>();
  o.train = vm["train"].defaulted() ? 1024 : vm["train"].as<std::int64_t>();
  o.val = vm["val"].as<std::int64_t>();
  o.test = vm["test"].as<std::int64_t>();
  o.shards = vm["shards"].as<int>();
  o.gzip = vm["gzip"].defaulted() ? 0 : vm["gzip"].as<int>();  // (noise compresses badly: off by default)
  o.force = vm.count("force") > 0;
  generate_cosmo(o);
  std::cout << "wrote " << o.train << " train, " << o.val << " val, " << o.test << " test volumes of "
            << o.spec.channels << "x" << o.spec.size << "^3 (targets: " << cosmo_target_names() << ") to " << o.out
            << "\n";
  return 0;
}

int generate(const po::variables_map& vm) {
  const std::string kind = vm["kind"].as<std::string>();
  if (kind == "cosmo") return generate_cosmo_cmd(vm);
  if (kind != "classes") throw bad_input("--kind '" + kind + "': expected classes or cosmo");
  GenerateOptions o;
  o.spec.sample_shape = parse_shape(vm["shape"].as<std::string>());
  o.spec.num_classes = vm["classes"].as<std::int64_t>();
  if (o.spec.num_classes < 1) throw bad_input("--classes must be >= 1");
  o.spec.seed = vm["seed"].as<std::uint64_t>();
  const std::string dtype = vm["dtype"].as<std::string>();
  if (dtype == "uint8")
    o.spec.type = SampleType::u8;
  else if (dtype == "float16")
    o.spec.type = SampleType::f16;
  else if (dtype == "float32")
    o.spec.type = SampleType::f32;
  else
    throw bad_input("--dtype '" + dtype + "': expected uint8, float16 or float32");
  o.out = vm["out"].as<std::string>();
  o.train = vm["train"].as<std::int64_t>();
  o.val = vm["val"].as<std::int64_t>();
  o.test = vm["test"].as<std::int64_t>();
  o.shards = vm["shards"].as<int>();
  o.chunk_rows = vm["chunk-rows"].as<std::int64_t>();
  o.gzip = vm["gzip"].as<int>();
  o.force = vm.count("force") > 0;
  generate_dataset(o);
  std::cout << "wrote " << o.train << " train, " << o.val << " val, " << o.test << " test samples to " << o.out << "\n";
  return 0;
}

// Every command's options (each command checks the ones it needs).
po::options_description options() {
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
      "root", po::value<std::string>())("input", po::value<std::vector<std::string>>()->multitoken())(
      "tokenizer", po::value<std::string>()->default_value("char"))(
      "val-fraction", po::value<double>()->default_value(0.1))("vocab", po::value<std::string>())(
      "documents", po::value<std::string>()->default_value("file"))(
      "text-field", po::value<std::string>()->default_value("text"))("threads", po::value<int>()->default_value(0))(
      "decode", "tokenize: ids in, bytes out")("special-tokens", "tokenize: the post-processor's special tokens first")(
      "label", po::value<std::string>())("regression", "float targets")("features", po::value<std::string>())(
      "test-fraction", po::value<double>()->default_value(0.0))(
      "shuffle-seed", po::value<std::uint64_t>()->default_value(1))("no-standardize", "keep raw values")(
      "size", po::value<int>()->default_value(32))("channels", po::value<int>()->default_value(3))(
      "cifar100", "CIFAR-100's records")("kind", po::value<std::string>()->default_value("classes"))(
      "x", po::value<std::string>()->default_value("full"))("y", po::value<std::string>()->default_value("unitPar"))(
      "layout", po::value<std::string>()->default_value("dhwc"))(
      "transform", po::value<std::string>()->default_value("none"))("target-names", po::value<std::string>());
  return o;
}

// Each command: its name, the options it needs, and what runs it.
struct Command {
  std::string name;
  std::vector<const char*> required;
  std::function<int(const std::string& cmd, const po::variables_map& vm)> run;
};
const std::vector<Command>& commands() {
  using Vm = const po::variables_map&;
  using Cmd = const std::string&;
  static const std::vector<Command> table{
      {"import-idx", {"images", "labels", "out"}, [](Cmd, Vm vm) { return import_cmd(vm); }},
      {"import-text", {"input", "out"}, [](Cmd, Vm vm) { return import_text_cmd(vm); }},
      {"import-csv", {"input", "out"}, import_table_cmd},
      {"import-npy", {"features", "labels", "out"}, import_table_cmd},
      {"import-cifar", {"input", "out"}, [](Cmd, Vm vm) { return import_cifar_cmd(vm); }},
      {"import-images", {"input", "out"}, [](Cmd, Vm vm) { return import_images_cmd(vm); }},
      {"import-h5", {"input", "out"}, [](Cmd, Vm vm) { return import_h5_cmd(vm); }},
      {"generate", {"out"}, [](Cmd, Vm vm) { return generate(vm); }},
      {"import-llmc", {"input", "vocab", "out"}, [](Cmd, Vm vm) { return import_llmc_cmd(vm); }},
      {"tokenize", {"vocab", "input"}, [](Cmd, Vm vm) { return tokenize_cmd(vm); }},
      {"inspect", {"root"}, [](Cmd, Vm vm) { return inspect(vm["root"].as<std::string>()); }},
  };
  return table;
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
    const po::options_description o = options();
    po::positional_options_description pos;
    pos.add("root", 1);
    po::variables_map vm;
    try {
      po::store(po::command_line_parser(argc - 1, argv + 1).options(o).positional(pos).run(), vm);
    } catch (const po::error& e) {
      throw bad_input(std::string(e.what()) + "\n" + kUsage);
    }
    if (vm["shards"].as<int>() < 1) throw bad_input("--shards must be >= 1");
    if (vm["chunk-rows"].as<std::int64_t>() < 1) throw bad_input("--chunk-rows must be >= 1");
    const int gz = vm["gzip"].as<int>();
    if (gz < 0 || gz > 9) throw bad_input("--gzip must be 0..9");
    for (const Command& c : commands())
      if (c.name == cmd) {
        for (const char* k : c.required)
          if (!vm.count(k)) throw bad_input(cmd + ": --" + k + " is required");
        return c.run(cmd, vm);
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
