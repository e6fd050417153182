// Checkpoint files (io/checkpoint_file.hpp): writing one collectively (parallel HDF5, chunked
// and checksummed) and reading it back; the directory they live in: io/checkpoint_dir.cpp.
#include "hpctrain/io/checkpoint_file.hpp"

#include <cblas.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <type_traits>

#include "hpctrain/comm/agreement.hpp"
#include "hpctrain/comm/mpi_communicator.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/version.hpp"

namespace fs = std::filesystem;

namespace hpctrain {

namespace {

constexpr hsize_t kMaxChunkBytes = 16u << 20;  // chunks of at most 16 MiB (HDF5 allows up to 4 GiB)

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string versions_hdf5() {
  unsigned a = 0, b = 0, c = 0;
  H5get_libversion(&a, &b, &c);
  return std::to_string(a) + "." + std::to_string(b) + "." + std::to_string(c);
}

std::string versions_mpi() {
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_Get_library_version(lib, &len);
  const std::string s(lib, static_cast<std::size_t>(len));
  return s.substr(0, s.find_first_of(",\n"));
}

// A dataset's chunk rows for `writers` writers: one chunk per writer where it fits in 16 MiB.
hsize_t chunk_rows_for(hsize_t rows, hsize_t row_bytes, int writers) {
  const hsize_t per = (rows + static_cast<hsize_t>(writers) - 1) / static_cast<hsize_t>(writers);
  return std::max<hsize_t>(1, std::min({per, kMaxChunkBytes / std::max<hsize_t>(1, row_bytes), rows}));
}

// Rows [first, first + count) of a dataset with `rows` rows that writer `index` of `writers`
// writes: whole chunks of `chunk_rows`, contiguous per writer.
void writer_rows(hsize_t rows, hsize_t chunk_rows, int index, int writers, hsize_t& first, hsize_t& count) {
  const hsize_t chunks = (rows + chunk_rows - 1) / chunk_rows;
  const hsize_t per = (chunks + static_cast<hsize_t>(writers) - 1) / static_cast<hsize_t>(writers);
  const hsize_t c0 = std::min(chunks, per * static_cast<hsize_t>(index)), c1 = std::min(chunks, c0 + per);
  first = std::min(rows, c0 * chunk_rows);
  count = std::min(rows, c1 * chunk_rows) - first;
}

// A dataspace's selection built box by box: the first replaces the selection (a single box
// stays a regular hyperslab, HDF5's fast path), later ones are added to it.
struct Selection {
  hid_t space;
  bool any = false;
  void add(const std::vector<hsize_t>& start, const std::vector<hsize_t>& count) {
    CHECK_H5(
        H5Sselect_hyperslab(space, any ? H5S_SELECT_OR : H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr));
    any = true;
  }
};

// Adds to `sel` the elements [a, b) (a < b) of the row-major order of `dims` from dimension
// `dim` on, as at most 2 (rank - 1) + 1 boxes: the partial leading block, the whole rows, the
// partial trailing block. `start`/`count` hold the indices fixed along the dimensions before `dim`.
void select_flat(Selection& sel, const std::vector<hsize_t>& dims, std::size_t dim, std::vector<hsize_t>& start,
                 std::vector<hsize_t>& count, hsize_t a, hsize_t b) {
  hsize_t inner = 1;
  for (std::size_t d = dim + 1; d < dims.size(); ++d) inner *= dims[d];
  auto box = [&](hsize_t first, hsize_t rows) {  // whole rows [first, first + rows) of this dimension
    start[dim] = first;
    count[dim] = rows;
    for (std::size_t d = dim + 1; d < dims.size(); ++d) {
      start[d] = 0;
      count[d] = dims[d];
    }
    sel.add(start, count);
  };
  const hsize_t first = a / inner, last = (b - 1) / inner;  // the rows of this dimension it touches
  if (a % inner == 0 && b % inner == 0) return box(first, last + 1 - first);
  auto within = [&](hsize_t row, hsize_t lo, hsize_t hi) {  // part [lo, hi) of one row: the next dimension
    start[dim] = row;
    count[dim] = 1;
    select_flat(sel, dims, dim + 1, start, count, lo, hi);
  };
  if (first == last) return within(first, a % inner, (b - 1) % inner + 1);
  hsize_t whole_from = first;
  if (a % inner != 0) {
    within(first, a % inner, inner);
    whole_from = first + 1;
  }
  const hsize_t whole_to = b % inner == 0 ? last + 1 : last;
  if (whole_to > whole_from) box(whole_from, whole_to - whole_from);
  if (b % inner != 0) within(last, 0, b % inner);
}

// Collective: this rank's elements `mine` of dataset `dset` (sorted, disjoint, row-major; none is
// fine), their values one after another from `src`, in one write.
void write_selection(hid_t dset, hid_t dxpl, const std::vector<hsize_t>& dims, hsize_t row_elems, const Ranges& mine,
                     const float* src, const std::string& path) {
  h5::Id file_space(CHECK_H5(H5Dget_space(dset)));
  Selection sel{file_space.get()};
  std::vector<hsize_t> start(dims.size(), 0), len(dims.size(), 1);
  for (const Range& r : mine)
    if (!r.empty()) select_flat(sel, dims, 0, start, len, static_cast<hsize_t>(r.begin), static_cast<hsize_t>(r.end));
  if (!sel.any) CHECK_H5(H5Sselect_none(file_space.get()));
  const hsize_t n = static_cast<hsize_t>(total(mine));
  // The memory: the values one after another; shaped like the file's selection when that is whole
  // rows (the selections then have the same shape, and HDF5 copies without gathering).
  std::vector<hsize_t> mem_dims{std::max<hsize_t>(1, n)};
  if (mine.size() == 1 && mine[0].begin % row_elems == 0 && mine[0].end % row_elems == 0) {
    mem_dims = dims;
    mem_dims[0] = static_cast<hsize_t>(mine[0].size()) / row_elems;
  }
  h5::Id mem_space(CHECK_H5(H5Screate_simple(static_cast<int>(mem_dims.size()), mem_dims.data(), nullptr)));
  if (n == 0) CHECK_H5(H5Sselect_none(mem_space.get()));
  HPCT_CHECK(n == 0 || src != nullptr, "checkpoint dataset " + path + ": no data for the elements this rank writes");
  static const float dummy = 0;  // a valid address for ranks that write nothing
  CHECK_H5(H5Dwrite(dset, H5T_NATIVE_FLOAT, mem_space.get(), file_space.get(), dxpl, n == 0 ? &dummy : src));
}

// Collective: one float32 dataset, chunked along its first dimension and checksummed. This rank
// writes its writer rows (writer `index` of `writers`; index < 0: none) from `t.data` (or made by
// `t.rows` a piece at a time), or with t.by_elements the elements t.elements from one after another
// at t.data (CheckpointTensor).
// Writer rows go in pieces of whole chunks of at most `piece_bytes`, as many writes on every rank
// (the first writer's rows are the most): HDF5's collective write of checksummed chunks holds a
// copy of what one write covers (a 256 MB tensor: 268 MB more, heaptrack 2026-12-06), so a piece,
// not the share.
void write_dataset(hid_t file, hid_t lcpl, hid_t dxpl, const CheckpointTensor& t, int index, int writers,
                   std::uint64_t piece_bytes) {
  std::vector<hsize_t> dims(t.shape.begin(), t.shape.end());
  if (dims.empty()) dims.push_back(1);
  hsize_t row_elems = 1;
  for (std::size_t d = 1; d < dims.size(); ++d) row_elems *= dims[d];
  const hsize_t chunk_rows = chunk_rows_for(dims[0], row_elems * sizeof(float), writers);
  h5::Id space(CHECK_H5(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr)));
  h5::Id dcpl(CHECK_H5(H5Pcreate(H5P_DATASET_CREATE)));
  std::vector<hsize_t> chunk = dims;
  chunk[0] = chunk_rows;
  CHECK_H5(H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()));
  CHECK_H5(H5Pset_fletcher32(dcpl.get()));
  CHECK_H5(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER));  // (chunks nobody writes read as zeros)
  h5::Id dset(CHECK_H5(H5Dcreate2(file, t.path.c_str(), H5T_IEEE_F32LE, space.get(), lcpl, dcpl.get(), H5P_DEFAULT)));
  if (!t.layer_type.empty()) h5::write_string_attribute(dset.get(), "layer_type", t.layer_type);
  if (t.by_elements)  // (the same on every rank; irregular elements: one write)
    return write_selection(dset.get(), dxpl, dims, row_elems, index >= 0 ? t.elements : Ranges{}, t.data, t.path);
  hsize_t first = 0, count = 0, most_first = 0, most = 0;  // this rank's rows; the most any writer has
  if (index >= 0) writer_rows(dims[0], chunk_rows, index, writers, first, count);
  writer_rows(dims[0], chunk_rows, 0, writers, most_first, most);
  const hsize_t chunk_bytes = chunk_rows * row_elems * sizeof(float);
  const hsize_t piece_rows = chunk_rows * std::max<hsize_t>(1, piece_bytes / chunk_bytes);
  const hsize_t pieces = std::max<hsize_t>(1, (most + piece_rows - 1) / piece_rows);
  std::vector<float> made;  // a piece of t.rows' values (t.data null)
  for (hsize_t p = 0; p < pieces; ++p) {
    const hsize_t r0 = std::min(count, p * piece_rows), r1 = std::min(count, r0 + piece_rows);
    const Ranges part = r1 > r0 ? Ranges{{static_cast<std::int64_t>((first + r0) * row_elems),
                                          static_cast<std::int64_t>((first + r1) * row_elems)}}
                                : Ranges{};
    const float* src = r1 > r0 && t.data != nullptr ? t.data + (first + r0) * row_elems : nullptr;
    if (r1 > r0 && t.data == nullptr && t.rows) {
      made.resize((r1 - r0) * row_elems);
      t.rows(static_cast<std::int64_t>(first + r0), static_cast<std::int64_t>(r1 - r0), made.data());
      src = made.data();
    }
    write_selection(dset.get(), dxpl, dims, row_elems, part, src, t.path);
  }
}

// The table's field types, as HDF5 attributes (TokenizerFiles: byte datasets, which only the
// `writer` rank fills) and as text (for broadcasts).
void write_attribute(hid_t obj, const char* name, const std::string& v, bool) {
  h5::write_string_attribute(obj, name, v);
}
void write_attribute(hid_t obj, const char* name, double v, bool) { h5::write_double_attribute(obj, name, {v}); }
template <class Int>
void write_attribute(hid_t obj, const char* name, Int v, bool) {
  h5::write_int_attribute(obj, name, static_cast<long long>(v));  // (the seed: its bits, as a signed 64-bit)
}
void write_attribute(hid_t obj, const char* name, const TokenizerFiles& v, bool writer) {
  for (const auto& [file, bytes] : v) h5::write_bytes(obj, std::string(name) + "/" + file, bytes, writer);
}
void write_attribute(hid_t obj, const char* name, const std::vector<double>& v, bool writer) {
  if (!v.empty()) h5::write_doubles(obj, name, v, writer);
}
template <class T>
bool present(hid_t obj, const char* name, const T&) {
  return h5::has_attribute(obj, name);
}
bool present(hid_t obj, const char* name, const TokenizerFiles&) { return h5::has_link(obj, name); }
bool present(hid_t obj, const char* name, const std::vector<double>&) { return h5::has_path(obj, name); }
void read_attribute(hid_t obj, const char* name, std::vector<double>& v) { v = h5::read_doubles(obj, name); }
void read_attribute(hid_t obj, const char* name, TokenizerFiles& v) {
  std::vector<std::string> files;
  auto collect = [](hid_t, const char* child, const H5L_info_t*, void* out) -> herr_t {
    static_cast<std::vector<std::string>*>(out)->push_back(child);
    return 0;
  };
  hsize_t at = 0;
  CHECK_H5(H5Literate_by_name(obj, name, H5_INDEX_NAME, H5_ITER_INC, &at, collect, &files, H5P_DEFAULT));
  v.clear();
  for (const auto& f : files) v.emplace_back(f, h5::read_bytes(obj, std::string(name) + "/" + f));
}
void read_attribute(hid_t obj, const char* name, std::string& v) { v = h5::read_string_attribute(obj, name); }
void read_attribute(hid_t obj, const char* name, double& v) { v = h5::read_double_attribute(obj, name).at(0); }
template <class Int>
void read_attribute(hid_t obj, const char* name, Int& v) {
  v = static_cast<Int>(h5::read_int_attribute(obj, name));
}
}  // namespace

Range writer_elements(const Shape& shape, int index, int writers) {
  if (index < 0) return {0, 0};
  const hsize_t rows = shape.empty() ? 1 : static_cast<hsize_t>(shape[0]);
  hsize_t row_elems = 1;
  for (std::size_t d = 1; d < shape.size(); ++d) row_elems *= static_cast<hsize_t>(shape[d]);
  hsize_t first = 0, count = 0;
  writer_rows(rows, chunk_rows_for(rows, row_elems * sizeof(float), writers), index, writers, first, count);
  return {static_cast<std::int64_t>(first * row_elems), static_cast<std::int64_t>((first + count) * row_elems)};
}

namespace {
// The root attributes, groups and datasets of a checkpoint into the open file `root` (collective);
// `guard` (the HDF5 lock, held) is released and taken again between datasets.
void write_contents(hid_t root, const CheckpointInfo& info, const std::vector<CheckpointTensor>& tensors,
                    const std::vector<std::pair<std::string, std::string>>& groups, const WriterPlace& place, int rank,
                    int size, const IntervalSums& rank_sums, std::uint64_t piece_bytes,
                    std::unique_lock<std::mutex>& guard);
}  // namespace

std::uint64_t preferred_alignment(const std::string& dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || st.st_blksize <= 0) return 4096;
  return std::max<std::uint64_t>(4096, static_cast<std::uint64_t>(st.st_blksize));
}

double write_checkpoint(Communicator& comm, const std::string& path, const CheckpointInfo& given,
                        const std::vector<CheckpointTensor>& tensors,
                        const std::vector<std::pair<std::string, std::string>>& groups, const WriterPlace& place,
                        const IntervalSums& rank_sums, const FileTuning& tuning) {
  const auto t0 = std::chrono::steady_clock::now();
  const int rank = comm.rank(), size = comm.size();
  // Attributes are collective in parallel HDF5: every rank writes rank 0's.
  std::string blob;
  if (rank == 0) {
    CheckpointInfo info = given;
    info.run.written_at = now_utc();
    info.run.software = std::string("hpctrain ") + HPCTRAIN_VERSION + " (" + HPCTRAIN_SOURCE_REVISION + ")";
    info.run.hdf5 = versions_hdf5();
    info.run.mpi = versions_mpi();
    info.run.blas = openblas_get_config();
    blob = encode_info(info);
  }
  broadcast_text(comm, blob, 0);
  const CheckpointInfo info = decode_info(blob);

  // HDF5 calls under the process-wide lock, released between datasets (write_contents) so another
  // thread's HDF5 calls (the data reader's chunk reads, beside a write in the background) go on.
  std::unique_lock<std::mutex> guard(h5::lock());
  h5::Id fapl(CHECK_H5(H5Pcreate(H5P_FILE_ACCESS)));
  MPI_Info hints = MPI_INFO_NULL;  // [checkpoint] mpiio_hints, for the MPI-IO layer (ROMIO, OMPIO)
  if (!tuning.hints.empty()) {
    CHECK_MPI(MPI_Info_create(&hints));
    for (const auto& [k, v] : tuning.hints) CHECK_MPI(MPI_Info_set(hints, k.c_str(), v.c_str()));
  }
  const herr_t set = H5Pset_fapl_mpio(fapl.get(), mpi_facility_handle(comm), hints);  // (HDF5 duplicates both)
  if (hints != MPI_INFO_NULL) MPI_Info_free(&hints);
  CHECK_H5(set);
  if (tuning.alignment > 1)  // objects at least one alignment unit large start on a boundary
    CHECK_H5(H5Pset_alignment(fapl.get(), tuning.alignment, tuning.alignment));
  CHECK_H5(H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG));  // closing the file closes whatever a failure left open
  h5::Id file(CHECK_H5(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get())));
  std::string error;
  try {
    write_contents(file.get(), info, tensors, groups, place, rank, size, rank_sums, tuning.piece_bytes, guard);
  } catch (const std::exception& e) {
    error = e.what();
  }
  guard.unlock();  // (no collective under the lock)
  int failed = error.empty() ? 0 : 1;
  comm.allreduce(&failed, &failed, 1, DType::i32, ReduceOp::max);
  if (failed) {
    // A full disk fails HDF5's metadata flush at close too, and a file HDF5 could not close
    // crashes its shutdown at MPI_Finalize: free the partial file's blocks (truncating works on
    // an open file), so the close can write what it must; the caller removes the file.
    if (rank == 0) (void)truncate(path.c_str(), 0);
    comm.barrier();
    guard.lock();
    H5E_BEGIN_TRY { file.reset(); }
    H5E_END_TRY;
    fapl.reset();
    guard.unlock();
    throw Error(ExitCode::internal, Scope::this_rank,
                error.empty() ? "the checkpoint write failed on another rank" : error);
  }
  guard.lock();
  file.reset();  // collective close: the file is complete on disk when every rank returns
  fapl.reset();
  guard.unlock();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

namespace {
void write_contents(hid_t root, const CheckpointInfo& info, const std::vector<CheckpointTensor>& tensors,
                    const std::vector<std::pair<std::string, std::string>>& groups, const WriterPlace& place, int rank,
                    int size, const IntervalSums& rank_sums, std::uint64_t piece_bytes,
                    std::unique_lock<std::mutex>& guard) {
  h5::write_string_attribute(root, "format", kCheckpointFormat);
  h5::write_int_attribute(root, "format_version", kCheckpointVersion);
  visit_fields(info, [&](const char* name, const auto& field, bool) { write_attribute(root, name, field, rank == 0); });

  h5::Id lcpl(CHECK_H5(H5Pcreate(H5P_LINK_CREATE)));
  CHECK_H5(H5Pset_create_intermediate_group(lcpl.get(), 1));
  for (const auto& group : groups) {  // (not a structured binding: CHECK_H5's lambda captures it, C++20 in clang)
    h5::Id g(CHECK_H5(H5Gcreate2(root, group.first.c_str(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT)));
    h5::write_string_attribute(g.get(), "type", group.second);
  }
  h5::Id dxpl(CHECK_H5(H5Pcreate(H5P_DATASET_XFER)));
  CHECK_H5(H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE));
  for (const CheckpointTensor& t : tensors) {
    const int index = place.pp == t.stage ? place.dp : -1;
    HPCT_CHECK(index < 0 || t.data != nullptr || t.rows || (t.by_elements && t.elements.empty()),
               "checkpoint tensor " + t.path + " has no data on its own stage");
    write_dataset(root, lcpl.get(), dxpl.get(), t, index, place.dp_size, piece_bytes);
    guard.unlock();  // between datasets: other threads' HDF5 calls get their turn
    std::this_thread::yield();
    guard.lock();
  }
  // Per-rank rows: rank r writes row r (chunks of one row, so no two ranks share a chunk).
  {
    const hsize_t dims[2] = {static_cast<hsize_t>(size), 3}, one[2] = {1, 3};
    h5::Id space(CHECK_H5(H5Screate_simple(2, dims, nullptr)));
    h5::Id dcpl(CHECK_H5(H5Pcreate(H5P_DATASET_CREATE)));
    CHECK_H5(H5Pset_chunk(dcpl.get(), 2, one));
    CHECK_H5(H5Pset_fletcher32(dcpl.get()));
    h5::Id dset(CHECK_H5(
        H5Dcreate2(root, "state/interval_sums", H5T_IEEE_F64LE, space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT)));
    const hsize_t start[2] = {static_cast<hsize_t>(rank), 0};
    CHECK_H5(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, one, nullptr));
    h5::Id mem(CHECK_H5(H5Screate_simple(2, one, nullptr)));
    CHECK_H5(H5Dwrite(dset.get(), H5T_NATIVE_DOUBLE, mem.get(), space.get(), dxpl.get(), &rank_sums.loss));
  }
}
}  // namespace

// ---- Reading ----

namespace {
Error corrupt(const std::string& file, const std::string& what) {
  return Error(ExitCode::bad_input, Scope::every_rank, "checkpoint '" + file + "': " + what);
}
}  // namespace

CheckpointFile::CheckpointFile(const std::string& path) : path_(path) {
  std::lock_guard<std::mutex> guard(h5::lock());
  if (!fs::exists(path)) throw corrupt(path, "no such file");
  if (fs::is_directory(path)) throw corrupt(path, "a folder, not a checkpoint file");
  if (H5Fis_hdf5(path.c_str()) <= 0) throw corrupt(path, "not an HDF5 file (truncated or overwritten?)");
  const hid_t fid = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (fid < 0) throw corrupt(path, "HDF5 cannot open it: " + hdf5_error_text());
  file_ = h5::Id(fid);
  const hid_t root = file_.get();
  try {
    if (!h5::has_attribute(root, "format") || h5::read_string_attribute(root, "format") != kCheckpointFormat)
      throw corrupt(
          path, std::string("not an hpctrain checkpoint (root attribute 'format' is not '") + kCheckpointFormat + "')");
    if (!h5::has_attribute(root, "format_version")) throw corrupt(path, "root attribute 'format_version' missing");
    const long long version = h5::read_int_attribute(root, "format_version");
    version_ = static_cast<int>(version);
    if (version > kCheckpointVersion)
      throw corrupt(path, "format_version " + std::to_string(version) + " is newer than this build reads (" +
                              std::to_string(kCheckpointVersion) + ")");
    visit_fields(info_, [&](const char* name, auto& field, bool optional) {
      if (present(root, name, field))
        read_attribute(root, name, field);
      else if (!optional)
        throw corrupt(path, std::string("root attribute '") + name + "' missing");
    });
  } catch (const Error& e) {
    if (e.code() == ExitCode::bad_input && std::string(e.what()).rfind("checkpoint '", 0) == 0) throw;
    throw corrupt(path, std::string("root attributes unreadable: ") + e.what());
  }
}

bool CheckpointFile::has(const std::string& dataset) const {
  std::lock_guard<std::mutex> guard(h5::lock());
  // H5Lexists needs every intermediate link to exist: check each prefix.
  for (std::size_t at = dataset.find('/'); at != std::string::npos; at = dataset.find('/', at + 1))
    if (!h5::has_link(file_.get(), dataset.substr(0, at))) return false;
  return h5::has_link(file_.get(), dataset);
}

Shape CheckpointFile::shape(const std::string& dataset) const {
  std::lock_guard<std::mutex> guard(h5::lock());
  const hid_t d = H5Dopen2(file_.get(), dataset.c_str(), H5P_DEFAULT);
  if (d < 0) throw corrupt(path_, "dataset /" + dataset + " is missing");
  h5::Id ds(d);
  const auto dims = h5::dataset_shape(ds.get());
  return Shape(dims.begin(), dims.end());
}

std::string CheckpointFile::group_type(const std::string& group) const { return string_attribute(group, "type"); }

std::string CheckpointFile::string_attribute(const std::string& object, const std::string& name) const {
  if (!has(object)) return "";
  std::lock_guard<std::mutex> guard(h5::lock());
  h5::Id g(CHECK_H5(H5Oopen(file_.get(), object.c_str(), H5P_DEFAULT)));
  return h5::has_attribute(g.get(), name.c_str()) ? h5::read_string_attribute(g.get(), name.c_str()) : "";
}

std::vector<std::string> CheckpointFile::children(const std::string& group) const {
  if (!has(group)) return {};
  std::lock_guard<std::mutex> guard(h5::lock());
  std::vector<std::string> names;
  auto collect = [](hid_t, const char* name, const H5L_info_t*, void* out) -> herr_t {
    static_cast<std::vector<std::string>*>(out)->push_back(name);
    return 0;
  };
  hsize_t at = 0;
  CHECK_H5(
      H5Literate_by_name(file_.get(), group.c_str(), H5_INDEX_NAME, H5_ITER_INC, &at, collect, &names, H5P_DEFAULT));
  return names;
}

namespace {
[[noreturn]] void throw_read_error(const std::string& file, const std::string& dataset) {
  const std::string why = hdf5_error_text();
  throw corrupt(file, "dataset /" + dataset + " cannot be read: " +
                          (why.find("checksum") != std::string::npos || why.find("Fletcher") != std::string::npos
                               ? "its Fletcher32 checksum does not match (the file is corrupt)"
                               : why));
}

// Rows [first, first + count) along the first dimension of a dataset of `dims` (at least 1-D).
void read_rows(const std::string& file, hid_t ds, const std::string& dataset, const std::vector<hsize_t>& dims,
               std::int64_t first, std::int64_t count, float* out) {
  std::vector<hsize_t> start(dims.size(), 0), block(dims);
  start[0] = static_cast<hsize_t>(first);
  block[0] = static_cast<hsize_t>(count);
  h5::Id file_space(CHECK_H5(H5Dget_space(ds)));
  CHECK_H5(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, block.data(), nullptr));
  h5::Id mem_space(CHECK_H5(H5Screate_simple(static_cast<int>(block.size()), block.data(), nullptr)));
  if (H5Dread(ds, H5T_NATIVE_FLOAT, mem_space.get(), file_space.get(), H5P_DEFAULT, out) < 0)
    throw_read_error(file, dataset);
}

h5::Id open_dataset(const std::string& file, hid_t fid, const std::string& dataset) {
  const hid_t d = H5Dopen2(fid, dataset.c_str(), H5P_DEFAULT);
  if (d < 0) throw corrupt(file, "dataset /" + dataset + " is missing");
  return h5::Id(d);
}

void read_all(const std::string& file, hid_t fid, const std::string& dataset, hid_t mem_type, void* out) {
  const h5::Id ds = open_dataset(file, fid, dataset);
  if (H5Dread(ds.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0) throw_read_error(file, dataset);
}
}  // namespace

void CheckpointFile::read(const std::string& dataset, float* out) const {
  std::lock_guard<std::mutex> guard(h5::lock());
  read_all(path_, file_.get(), dataset, H5T_NATIVE_FLOAT, out);
}

void CheckpointFile::read_elements(const std::string& dataset, std::int64_t first, std::int64_t count,
                                   float* out) const {
  if (count <= 0) return;
  std::lock_guard<std::mutex> guard(h5::lock());
  const h5::Id ds = open_dataset(path_, file_.get(), dataset);
  const auto dims = h5::dataset_shape(ds.get());
  std::int64_t total = 1;
  for (auto n : dims) total *= static_cast<std::int64_t>(n);
  HPCT_CHECK(first >= 0 && first + count <= total, "read_elements: a range outside /" + dataset);
  if (dims.empty()) {  // a scalar: its one value
    if (H5Dread(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0) throw_read_error(path_, dataset);
    return;
  }
  const std::int64_t row = total / static_cast<std::int64_t>(dims[0]);
  const std::int64_t r0 = first / row, r1 = (first + count + row - 1) / row;
  if (r0 * row == first && r1 * row == first + count)
    return read_rows(path_, ds.get(), dataset, dims, r0, r1 - r0, out);
  std::vector<float> rows(static_cast<std::size_t>((r1 - r0) * row));  // the whole rows around the range
  read_rows(path_, ds.get(), dataset, dims, r0, r1 - r0, rows.data());
  std::copy_n(rows.data() + (first - r0 * row), count, out);
}

std::vector<double> CheckpointFile::read_f64(const std::string& dataset) const {
  const Shape s = shape(dataset);
  std::vector<double> v(static_cast<std::size_t>(numel(s)));
  std::lock_guard<std::mutex> guard(h5::lock());
  read_all(path_, file_.get(), dataset, H5T_NATIVE_DOUBLE, v.data());
  return v;
}

}  // namespace hpctrain
