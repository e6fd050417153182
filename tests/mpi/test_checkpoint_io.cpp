// The parallel checkpoint writer at 1-4 ranks: every rank writes a disjoint
// part of each dataset (rows split over the data-parallel ranks of the stage
// that owns it, including shapes with fewer rows than ranks), and reading the
// file back gives exactly the tensors, attributes and per-rank rows that were written, on one
// rank or by every rank's own slabs. Also the directory rules: `latest`, keep K, and
// partial files of a failed write ignored (removed at start-up by the lock holder: test_run_lock).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <type_traits>

#include "hpctrain/comm/mpi_handles.hpp"
#include "hpctrain/config/schema.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/io/checkpoint_file.hpp"
#include "hpctrain/runtime/runtime.hpp"
#include "mpi_test_util.hpp"

namespace fs = std::filesystem;
using namespace hpctrain;

namespace {
std::vector<float> ramp(std::int64_t n, float base) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = base + 0.5f * static_cast<float>(i);
  return v;
}

// One float32 tensor "model/0<i>_dense/weight" per shape, of ramp values from base * i; the
// tensors point into `values`.
struct RampTensors {
  std::vector<std::vector<float>> values;
  std::vector<CheckpointTensor> tensors;
};
RampTensors ramp_tensors(const std::vector<Shape>& shapes, float base) {
  RampTensors r;
  for (std::size_t i = 0; i < shapes.size(); ++i)
    r.values.push_back(ramp(numel(shapes[i]), base * static_cast<float>(i)));
  for (std::size_t i = 0; i < shapes.size(); ++i)
    r.tensors.push_back({"model/0" + std::to_string(i) + "_dense/weight", shapes[i], r.values[i].data(), 0});
  return r;
}

// Collective: `tensors` into a checkpoint at `path` with a minimal record, every rank a writer.
void write_plain(const std::string& path, const std::vector<CheckpointTensor>& tensors) {
  CheckpointInfo info;
  info.run.world = info.run.dp = world_size();
  info.run.optimizer = "sgd";
  const IntervalSums sums;
  write_checkpoint(*host_communicator(MPI_COMM_WORLD, "world"), path, info, tensors, {},
                   {world_rank(), world_size(), 0, 1}, sums);
}

}  // namespace

TEST(CheckpointIo, DisjointParallelWriteReadsBackExactly) {
  const std::string dir = shared_dir("hpct_ckpt_io_");
  const std::string path = dir + "/ckpt-00000007.h5";
  // Every data-parallel rank holds the same values, as in training.
  const std::vector<Shape> shapes{{7, 3}, {3}, {1, 5}, {5, 2, 3, 3}, {130, 4}};
  const auto [values, tensors] = ramp_tensors(shapes, 10.f);
  CheckpointInfo info;
  info.state.step = 7;
  info.state.epoch = 1;
  info.state.epoch_step = 2;
  info.state.samples = 7 * 64;
  info.run.global_batch = 64;
  info.run.seed = 99;
  info.run.world = world_size();
  info.run.dp = world_size();
  info.state.last_loss = 0.125;
  info.run.optimizer = "adam";
  info.state.optimizer_steps = 7;
  info.run.ini = "[run]\nseed = 99\n";
  info.run.model_summary = "summary";
  const IntervalSums sums{1.0 + world_rank(), 2.0 * world_rank(), 64.0};
  const WriterPlace place{world_rank(), world_size(), 0, 1};
  write_checkpoint(*host_communicator(MPI_COMM_WORLD, "world"), path, info, tensors, {{"model/00_dense", "dense"}},
                   place, sums);
  if (world_rank() == 0) {
    const CheckpointFile f(path);
    EXPECT_EQ(f.info().state.step, 7);
    EXPECT_EQ(f.info().state.epoch_step, 2);
    EXPECT_EQ(f.info().run.seed, 99u);
    EXPECT_EQ(f.info().run.world, world_size());
    EXPECT_EQ(f.info().state.last_loss, 0.125);
    EXPECT_EQ(f.info().state.optimizer_steps, 7);
    EXPECT_EQ(f.info().run.ini, info.run.ini);
    EXPECT_FALSE(f.info().run.software.empty());
    EXPECT_EQ(f.group_type("model/00_dense"), "dense");
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      ASSERT_TRUE(f.has(tensors[i].path)) << tensors[i].path;
      EXPECT_EQ(f.shape(tensors[i].path), shapes[i]);
      std::vector<float> back(values[i].size(), -1.f);
      f.read(tensors[i].path, back.data());
      EXPECT_EQ(back, values[i]) << tensors[i].path << " at " << world_size() << " ranks";
    }
    const auto rows = f.read_f64("state/interval_sums");
    ASSERT_EQ(rows.size(), static_cast<std::size_t>(3 * world_size()));
    for (int r = 0; r < world_size(); ++r) {
      EXPECT_EQ(rows[3 * r], 1.0 + r);
      EXPECT_EQ(rows[3 * r + 1], 2.0 * r);
    }
    EXPECT_FALSE(f.has("model/99_dense/weight"));
    EXPECT_FALSE(f.has("nothing/here"));
    fs::remove_all(dir);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Resuming reads by slab: every rank opens the file at once and reads element ranges of its own
// (whole rows, part of one row, ranges that start and end inside rows, a 1-D range, all of it)
// by hyperslab; each gives exactly those elements, and a range past the end is refused.
TEST(CheckpointIo, EveryRankReadsItsOwnSlabs) {
  const std::string dir = shared_dir("hpct_ckpt_slabs_");
  const std::string path = dir + "/c.h5";
  const std::vector<Shape> shapes{{7, 3}, {11}, {5, 2, 3, 3}, {130, 4}};
  const auto [values, tensors] = ramp_tensors(shapes, 100.f);
  write_plain(path, tensors);
  const CheckpointFile f(path);  // (every rank)
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const std::int64_t n = numel(shapes[i]);
    const std::int64_t r = world_rank();
    const std::vector<std::pair<std::int64_t, std::int64_t>> ranges{
        {0, n},
        {r, 1},
        {1 + r, n / 2},
        {n - 3 - r, 3},
        {(n / 3) * r % n, std::min<std::int64_t>(n / 3, n - (n / 3) * r % n)}};
    for (const auto& [first, count] : ranges) {
      std::vector<float> back(static_cast<std::size_t>(count), -1.f);
      f.read_elements(tensors[i].path, first, count, back.data());
      const std::vector<float> want(values[i].begin() + first, values[i].begin() + first + count);
      EXPECT_EQ(back, want) << tensors[i].path << " [" << first << ", " << first + count << ") on rank " << r;
    }
  }
  float x = 0;
  EXPECT_THROW(f.read_elements(tensors[0].path, 20, 2, &x), Error);
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(dir);
}

// Tensors written by elements (the optimizer state, CheckpointTensor::by_elements): every rank
// writes stripes of 7 elements (rank r: the stripes k with k % D == r), cut anywhere along every
// dimension of 1-D to 4-D tensors, so several ranks write each chunk; one tensor nobody writes
// (a frozen layer's state) reads as zeros. The file, read whole, holds every value exactly.
TEST(CheckpointIo, ElementWritesOfEveryRankMakeTheWholeTensor) {
  const std::string dir = shared_dir("hpct_ckpt_elems_");
  const std::string path = dir + "/c.h5";
  const std::vector<Shape> shapes{{7, 3}, {11}, {5, 2, 3, 3}, {130, 4}, {4, 5}};
  auto [values, tensors] = ramp_tensors(shapes, 100.f);
  std::vector<std::vector<float>> packed(shapes.size());
  const std::int64_t d = world_size(), r = world_rank();
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    tensors[i].by_elements = true;
    if (i + 1 == shapes.size()) continue;  // nobody writes the last one
    const std::int64_t n = numel(shapes[i]);
    for (std::int64_t k = r; k * 7 < n; k += d) {
      const std::int64_t b = k * 7, e = std::min(n, b + 7);
      tensors[i].elements.push_back({b, e});
      packed[i].insert(packed[i].end(), values[i].begin() + b, values[i].begin() + e);
    }
    tensors[i].data = packed[i].data();
  }
  write_plain(path, tensors);
  if (world_rank() == 0) {
    const CheckpointFile f(path);
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      std::vector<float> back(values[i].size(), -1.f);
      f.read(tensors[i].path, back.data());
      const std::vector<float> want = i + 1 == shapes.size() ? std::vector<float>(back.size(), 0.f) : values[i];
      EXPECT_EQ(back, want) << tensors[i].path << " at " << world_size() << " ranks";
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(dir);
}

// ---- The field table (io/checkpoint_file.hpp visit_fields) ----

namespace {
// The member count of an aggregate: how many initializers T{...} takes (one per member; a
// member struct counts once). A field added to TrainState, LossScaler or RunRecord changes it.
struct AnyField {
  template <class T>
  operator T() const;  // (never called: only used in unevaluated contexts)
};
template <class T, class... A>
auto braces(int) -> decltype(T{std::declval<A>()...}, std::true_type{});
template <class T, class...>
std::false_type braces(...);
template <class T, class... A>
constexpr std::size_t member_count() {
  if constexpr (decltype(braces<T, A..., AnyField>(0))::value)
    return member_count<T, A..., AnyField>();
  else
    return sizeof...(A);
}

bool set_by_writer(const std::string& name) {
  return name == "written_at" || name == "software" || name == "hdf5_version" || name == "mpi_version" ||
         name == "blas";
}

// Every field of the table set to a value of its own (n-th field: n + 1000, n + 0.25, its name).
CheckpointInfo distinct_info() {
  CheckpointInfo info;
  int n = 0;
  auto set = [&n](const char* name, auto& field, bool) {
    using T = std::decay_t<decltype(field)>;
    if constexpr (std::is_same_v<T, std::string>)
      field = std::string(name) + " value";
    else if constexpr (std::is_same_v<T, TokenizerFiles>)
      field = {{"a.json", std::string(name) + std::string("\0\xff bytes", 7)}, {"b.bpe", "#version"}};
    else if constexpr (std::is_same_v<T, std::vector<double>>)
      field = {n + 0.5, -1.0 / 3, 1e-300};
    else if constexpr (std::is_floating_point_v<T>)
      field = n + 0.25;
    else
      field = static_cast<T>(n + 1000);
    ++n;
  };
  visit_fields(info, set);
  return info;
}

// Field by field, "" when equal: the first difference named.
std::string first_difference(const CheckpointInfo& a, const CheckpointInfo& b, bool skip_writer_fields) {
  std::vector<std::string> values_a, values_b, names;
  auto collect = [](std::vector<std::string>& out, std::vector<std::string>* names_out) {
    return [&out, names_out](const char* name, const auto& field, bool) {
      std::ostringstream os;
      os.precision(17);
      if constexpr (std::is_same_v<std::decay_t<decltype(field)>, TokenizerFiles>)
        for (const auto& [file, bytes] : field) os << file << '=' << bytes << ';';
      else if constexpr (std::is_same_v<std::decay_t<decltype(field)>, std::vector<double>>)
        for (double x : field) os << x << ',';
      else
        os << field;
      out.push_back(os.str());
      if (names_out) names_out->push_back(name);
    };
  };
  visit_fields(a, collect(values_a, &names));
  visit_fields(b, collect(values_b, nullptr));
  for (std::size_t i = 0; i < names.size(); ++i)
    if (!(skip_writer_fields && set_by_writer(names[i])) && values_a[i] != values_b[i])
      return names[i] + ": " + values_a[i] + " vs " + values_b[i];
  return "";
}
}  // namespace

// [checkpoint] mpiio_hints reach MPI-IO (a write with ROMIO/OMPIO hints works and reads back) and
// [checkpoint] alignment puts every chunk of at least the alignment at a multiple of it.
TEST(CheckpointIo, HintsAndAlignment) {
  const std::string dir = shared_dir("hpct_ckpt_align_");
  const std::string path = dir + "/ckpt-00000003.h5";
  const std::vector<float> big = ramp(300 * 1000, 1.f), small = ramp(10, 2.f);
  const std::vector<CheckpointTensor> tensors{{"model/00_dense/weight", {300, 1000}, big.data(), 0},
                                              {"model/00_dense/bias", {10}, small.data(), 0}};
  CheckpointInfo info;
  info.state.step = 3;
  info.run.world = world_size();
  const IntervalSums sums;
  FileTuning tuning;
  tuning.hints = parse_key_values("romio_cb_write=enable, cb_nodes=1,striping_unit=65536");
  tuning.alignment = 65536;
  write_checkpoint(*host_communicator(MPI_COMM_WORLD, "world"), path, info, tensors, {},
                   {world_rank(), world_size(), 0, 1}, sums, tuning);
  if (world_rank() == 0) {
    {
      const CheckpointFile f(path);
      std::vector<float> back(big.size());
      f.read("model/00_dense/weight", back.data());
      EXPECT_EQ(back, big);
    }
    h5::Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
    h5::Id d(H5Dopen2(file.get(), "model/00_dense/weight", H5P_DEFAULT));
    h5::Id space(H5Dget_space(d.get()));
    hsize_t chunks = 0;
    ASSERT_GE(H5Dget_num_chunks(d.get(), space.get(), &chunks), 0);
    ASSERT_GT(chunks, 0u);
    for (hsize_t c = 0; c < chunks; ++c) {
      hsize_t offset[2] = {0, 0}, size = 0;
      haddr_t addr = 0;
      unsigned mask = 0;
      ASSERT_GE(H5Dget_chunk_info(d.get(), space.get(), c, offset, &mask, &addr, &size), 0);
      if (size >= 65536) {
        EXPECT_EQ(addr % 65536, 0u) << "chunk " << c << " of " << size << " bytes at " << addr;
      }
    }
    fs::remove_all(dir);
  }
  EXPECT_THROW(parse_key_values("romio_cb_write"), std::invalid_argument);
  EXPECT_THROW(parse_key_values("=enable"), std::invalid_argument);
  EXPECT_EQ(parse_key_values(" a=1 ,b=x=y,").size(), 2u);
}

TEST(CheckpointFields, TheTableCoversEveryFieldOnce) {
  CheckpointInfo info;
  std::set<const void*> seen;
  std::set<std::string> names;
  std::size_t in_state = 0, in_run = 0;
  const auto* state_begin = reinterpret_cast<const char*>(&info.state);
  const auto* run_begin = reinterpret_cast<const char*>(&info.run);
  visit_fields(info, [&](const char* name, const auto& field, bool) {
    const auto* at = reinterpret_cast<const char*>(&field);
    EXPECT_TRUE(seen.insert(at).second) << name << " is visited twice";
    EXPECT_TRUE(names.insert(name).second) << "two fields are named " << name;
    if (at >= state_begin && at < state_begin + sizeof info.state) ++in_state;
    if (at >= run_begin && at < run_begin + sizeof info.run) ++in_run;
  });
  // TrainState's members with the scaler and the guard's record counted as one each, then their own.
  EXPECT_EQ(in_state, member_count<TrainState>() - 2 + member_count<LossScaler>() + member_count<GuardRecord>())
      << "a TrainState, LossScaler or GuardRecord field is missing from visit_fields (io/checkpoint_file.hpp)";
  EXPECT_EQ(in_run, member_count<RunRecord>())
      << "a RunRecord field is missing from visit_fields (io/checkpoint_file.hpp)";
  EXPECT_EQ(member_count<LossScaler>(), 3u);  // the counter itself counts
  EXPECT_EQ(member_count<GuardRecord>(), 4u);
}

TEST(CheckpointFields, EveryFieldSurvivesTheFileAndTheBroadcast) {
  const CheckpointInfo info = distinct_info();
  EXPECT_EQ(first_difference(info, decode_info(encode_info(info)), false), "");
  const std::string dir = shared_dir("hpct_ckpt_fields_");
  const IntervalSums sums;
  write_checkpoint(*host_communicator(MPI_COMM_WORLD, "world"), dir + "/c.h5", info, {}, {},
                   {world_rank(), world_size(), 0, 1}, sums);
  if (world_rank() == 0) {
    const CheckpointFile f(dir + "/c.h5");
    EXPECT_EQ(first_difference(info, f.info(), true), "");
    EXPECT_EQ(f.info().run.software.rfind("hpctrain ", 0), 0u);
    EXPECT_FALSE(f.info().run.hdf5.empty());
  }
  if (world_rank() == 0) {  // the spike rule's window as another type: one line naming it
    {
      h5::Id file(CHECK_H5(H5Fopen((dir + "/c.h5").c_str(), H5F_ACC_RDWR, H5P_DEFAULT)));
      CHECK_H5(H5Ldelete(file.get(), "state/loss_window", H5P_DEFAULT));
      h5::write_bytes(file.get(), "state/loss_window", "abc");
    }
    try {
      CheckpointFile f(dir + "/c.h5");
      FAIL() << "read a loss window of bytes";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("dataset state/loss_window is not a 1-D array of floating-point numbers"),
                std::string::npos)
          << e.what();
    }
    fs::remove_all(dir);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Model parallelism (a later issue) gives layers to stages; the writer takes a
// tensor from the ranks of its stage only, and the others pass no data.
TEST(CheckpointIo, TensorsOwnedByOneStageAreWrittenByItsRanks) {
  if (world_size() % 2 != 0) GTEST_SKIP() << "needs an even rank count (2 stages)";
  const std::string dir = shared_dir("hpct_ckpt_mp_");
  const int mp = world_rank() % 2, dp = world_rank() / 2, dp_size = world_size() / 2;
  const auto a = ramp(12, 1.f), b = ramp(9, 100.f);
  const std::vector<CheckpointTensor> tensors{{"model/00_dense/weight", {4, 3}, mp == 0 ? a.data() : nullptr, 0},
                                              {"model/01_dense/weight", {9}, mp == 1 ? b.data() : nullptr, 1}};
  CheckpointInfo info;
  info.run.pp = 2;
  const IntervalSums sums;
  write_checkpoint(*host_communicator(MPI_COMM_WORLD, "world"), dir + "/c.h5", info, tensors, {}, {dp, dp_size, mp, 2},
                   sums);
  if (world_rank() == 0) {
    const CheckpointFile f(dir + "/c.h5");
    std::vector<float> x(12), y(9);
    f.read("model/00_dense/weight", x.data());
    f.read("model/01_dense/weight", y.data());
    EXPECT_EQ(x, a);
    EXPECT_EQ(y, b);
    fs::remove_all(dir);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// A writer's rows go in pieces of whole chunks (FileTuning::piece_bytes, 64 MiB by default), as
// many writes on every rank: HDF5's collective write of checksummed chunks holds a copy of what one
// write covers. One rank per stage, so the 9,000 x 1,100 tensor (chunks of at most 16 MiB: 3,813 +
// 3,813 + 1,374 rows) is the last rank's alone, written in 3 pieces with piece_bytes = 1 while the
// other ranks take part with nothing, and a small tensor of the first stage in one. Read back,
// every value is the one written (with a piece's values taken from the share's start, the second
// and third pieces would repeat the first's).
TEST(CheckpointIo, WriterRowsInPiecesOfWholeChunks) {
  const std::string dir = shared_dir("hpct_ckpt_pieces_");
  const int stages = world_size(), me = world_rank();
  const auto big = ramp(9000 * 1100, 3.f), small = ramp(12, 7.f), made = ramp(5000 * 1100, 5.f);
  std::vector<std::int64_t> asked(5000, 0);  // how often each row of the made tensor was asked for
  std::int64_t most = 0;                     // the most rows one call asked for
  CheckpointTensor lazy{"model/02_dense/weight", {5000, 1100}, nullptr, 0};  // 2 chunks
  if (me == 0)
    lazy.rows = [&](std::int64_t first, std::int64_t count, float* out) {
      for (std::int64_t r = first; r < first + count; ++r) ++asked[static_cast<std::size_t>(r)];
      most = std::max(most, count);
      std::copy_n(made.data() + first * 1100, count * 1100, out);
    };
  const std::vector<CheckpointTensor> tensors{
      {"model/00_dense/weight", {9000, 1100}, me == stages - 1 ? big.data() : nullptr, stages - 1},
      {"model/01_dense/weight", {4, 3}, me == 0 ? small.data() : nullptr, 0},
      lazy};
  CheckpointInfo info;
  info.run.pp = stages;
  FileTuning tuning;
  tuning.piece_bytes = 1;
  write_checkpoint(*host_communicator(MPI_COMM_WORLD, "world"), dir + "/c.h5", info, tensors, {}, {0, 1, me, stages},
                   IntervalSums{}, tuning);
  if (me == 0) {
    const CheckpointFile f(dir + "/c.h5");
    std::vector<float> x(big.size()), y(12), z(made.size());
    f.read("model/00_dense/weight", x.data());
    f.read("model/01_dense/weight", y.data());
    f.read("model/02_dense/weight", z.data());
    EXPECT_TRUE(x == big) << "the 3-piece tensor differs";
    EXPECT_EQ(y, small);
    // A tensor made by its rows function (--import-hf's): asked for a piece at a time, each row once.
    EXPECT_TRUE(z == made) << "the tensor made piece by piece differs";
    EXPECT_TRUE(std::all_of(asked.begin(), asked.end(), [](std::int64_t n) { return n == 1; }));
    EXPECT_LT(most, 5000) << "the whole tensor was asked for at once";
    fs::remove_all(dir);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(CheckpointIo, DirectoryLatestKeepAndPartialFiles) {
  if (world_rank() != 0) return;
  const std::string dir = (fs::temp_directory_path() / ("hpct_ckpt_dir_" + std::to_string(getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  EXPECT_EQ(find_latest_checkpoint(dir), "");
  auto touch = [&](const std::string& name) { std::ofstream(dir + "/" + name) << "x"; };
  touch(".ckpt-00000040.h5.partial");  // a write that died: never a candidate
  for (int step : {10, 20, 30}) {
    touch(checkpoint_file_name(step));
    publish_checkpoint(dir, checkpoint_file_name(step), 2);
  }
  EXPECT_EQ(list_checkpoints(dir), (std::vector<std::string>{"ckpt-00000020.h5", "ckpt-00000030.h5"}));
  EXPECT_EQ(find_latest_checkpoint(dir), dir + "/ckpt-00000030.h5");
  EXPECT_TRUE(fs::exists(dir + "/.ckpt-00000040.h5.partial"));  // maybe another run's write: left alone
  fs::remove(dir + "/latest");                                  // without the pointer: the highest step
  EXPECT_EQ(find_latest_checkpoint(dir), dir + "/ckpt-00000030.h5");
  std::ofstream(dir + "/latest") << "ckpt-00000099.h5\n";  // a pointer to a missing file: not trusted, said so
  std::string warning;
  EXPECT_EQ(find_latest_checkpoint(dir, &warning), dir + "/ckpt-00000030.h5");
  EXPECT_EQ(warning, dir +
                         "/latest names ckpt-00000099.h5, which does not exist; using the newest complete "
                         "checkpoint by step, " +
                         dir + "/ckpt-00000030.h5");
  std::ofstream(dir + "/latest", std::ios::binary) << std::string("\x01\xff\0ck", 5);  // damaged bytes: the same
  warning.clear();
  EXPECT_EQ(find_latest_checkpoint(dir, &warning), dir + "/ckpt-00000030.h5");
  EXPECT_EQ(warning, dir + "/latest does not hold a checkpoint name; using the newest complete checkpoint by step, " +
                         dir + "/ckpt-00000030.h5");
  std::ofstream(dir + "/latest") << "../../etc/passwd\n";  // not a checkpoint's name
  warning.clear();
  EXPECT_EQ(find_latest_checkpoint(dir, &warning), dir + "/ckpt-00000030.h5");
  EXPECT_NE(warning.find("does not hold a checkpoint name"), std::string::npos);
  fs::remove_all(dir);
}

TEST(CheckpointIo, NotACheckpointIsBadInputNamingTheFile) {
  if (world_rank() != 0) return;
  const std::string path = (fs::temp_directory_path() / ("hpct_notckpt_" + std::to_string(getpid()))).string();
  std::ofstream(path) << "plain text";
  try {
    CheckpointFile f(path);
    FAIL() << "opened a text file";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not an HDF5 file"), std::string::npos) << e.what();
  }
  try {  // a folder (checkpoint.resume = runs/x): said so, not "truncated or overwritten"
    CheckpointFile f(fs::temp_directory_path().string());
    FAIL() << "opened a folder";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "checkpoint '" + fs::temp_directory_path().string() + "': a folder, not a checkpoint file");
  }
  // A checkpoint's required root attribute missing: one line naming it (fuzz_h5 found HDF5's
  // error stack there instead).
  for (const char* missing : {"format_version", "ini_file"}) {
    {
      h5::Id file(CHECK_H5(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT)));
      h5::write_string_attribute(file.get(), "format", kCheckpointFormat);
      if (std::string(missing) != "format_version") h5::write_int_attribute(file.get(), "format_version", 2);
    }
    try {
      CheckpointFile f(path);
      FAIL() << "opened a checkpoint without " << missing;
    } catch (const Error& e) {
      const std::string want =
          path + "': root attribute '" + (std::string(missing) == "format_version" ? missing : "step") + "' missing";
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find("H5Aopen"), std::string::npos) << e.what();
    }
  }
  fs::remove(path);
}
