// Implementation of the HDF5 RAII layer and helpers (io/h5.hpp).
#include "hpctrain/io/h5.hpp"

#include "hpctrain/core/error.hpp"

namespace hpctrain::h5 {

std::mutex& lock() {
  static std::mutex m;  // HDF5's own state is process-wide; so is its lock
  return m;
}

void Id::reset() {
  if (id_ >= 0) H5Idec_ref(id_);
  id_ = -1;
}

Id open_file(const std::string& path) { return Id(CHECK_H5(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT))); }

Id create_file(const std::string& path) {
  return Id(CHECK_H5(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT)));
}

bool has_link(hid_t loc, const std::string& name) { return H5Lexists(loc, name.c_str(), H5P_DEFAULT) > 0; }

bool has_attribute(hid_t obj, const std::string& name) { return H5Aexists(obj, name.c_str()) > 0; }

std::vector<hsize_t> dataset_shape(hid_t dataset) {
  Id space(CHECK_H5(H5Dget_space(dataset)));
  const int rank = CHECK_H5(H5Sget_simple_extent_ndims(space.get()));
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0) CHECK_H5(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr));
  return dims;
}

std::string read_string_attribute(hid_t obj, const std::string& name) {
  Id attr(CHECK_H5(H5Aopen(obj, name.c_str(), H5P_DEFAULT)));
  Id type(CHECK_H5(H5Aget_type(attr.get())));
  if (H5Tget_class(type.get()) != H5T_STRING)
    throw Error(ExitCode::bad_input, Scope::every_rank, "attribute '" + name + "' is not a string");
  if (H5Tis_variable_str(type.get()) > 0) {
    Id mem(CHECK_H5(H5Tcopy(H5T_C_S1)));
    CHECK_H5(H5Tset_size(mem.get(), H5T_VARIABLE));
    CHECK_H5(H5Tset_cset(mem.get(), H5Tget_cset(type.get())));  // h5py writes UTF-8: no ASCII conversion
    char* text = nullptr;
    CHECK_H5(H5Aread(attr.get(), mem.get(), &text));
    std::string out = text ? text : "";
    H5free_memory(text);
    return out;
  }
  const std::size_t size = H5Tget_size(type.get());
  std::string out(size, '\0');
  Id mem(CHECK_H5(H5Tcopy(H5T_C_S1)));
  CHECK_H5(H5Tset_size(mem.get(), size));
  CHECK_H5(H5Tset_cset(mem.get(), H5Tget_cset(type.get())));
  CHECK_H5(H5Aread(attr.get(), mem.get(), out.data()));
  out.resize(out.find('\0') == std::string::npos ? out.size() : out.find('\0'));
  return out;
}

long long read_int_attribute(hid_t obj, const std::string& name) {
  Id attr(CHECK_H5(H5Aopen(obj, name.c_str(), H5P_DEFAULT)));
  Id type(CHECK_H5(H5Aget_type(attr.get())));
  if (H5Tget_class(type.get()) != H5T_INTEGER)
    throw Error(ExitCode::bad_input, Scope::every_rank, "attribute '" + name + "' is not an integer");
  Id space(CHECK_H5(H5Aget_space(attr.get())));
  if (H5Sget_simple_extent_npoints(space.get()) != 1)
    throw Error(ExitCode::bad_input, Scope::every_rank, "attribute '" + name + "' is not a single integer");
  long long v = 0;
  CHECK_H5(H5Aread(attr.get(), H5T_NATIVE_LLONG, &v));
  return v;
}

std::vector<double> read_double_attribute(hid_t obj, const std::string& name) {
  Id attr(CHECK_H5(H5Aopen(obj, name.c_str(), H5P_DEFAULT)));
  Id type(CHECK_H5(H5Aget_type(attr.get())));
  const H5T_class_t cls = H5Tget_class(type.get());
  if (cls != H5T_FLOAT && cls != H5T_INTEGER)
    throw Error(ExitCode::bad_input, Scope::every_rank, "attribute '" + name + "' is not numeric");
  Id space(CHECK_H5(H5Aget_space(attr.get())));
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n < 1 || n > (1 << 20))
    throw Error(ExitCode::bad_input, Scope::every_rank,
                "attribute '" + name + "' has " + std::to_string(n) + " values");
  std::vector<double> v(static_cast<std::size_t>(n));
  CHECK_H5(H5Aread(attr.get(), H5T_NATIVE_DOUBLE, v.data()));
  return v;
}

void write_string_attribute(hid_t obj, const std::string& name, const std::string& value) {
  Id type(CHECK_H5(H5Tcopy(H5T_C_S1)));
  CHECK_H5(H5Tset_size(type.get(), value.empty() ? 1 : value.size()));
  CHECK_H5(H5Tset_strpad(type.get(), H5T_STR_NULLTERM));
  Id space(CHECK_H5(H5Screate(H5S_SCALAR)));
  HPCT_CHECK(value.size() < 60000, "attribute '" + name + "' of " + std::to_string(value.size()) +
                                       " bytes is over HDF5's 64 KiB for an attribute (store it as a dataset)");
  Id attr(CHECK_H5(H5Acreate2(obj, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT)));
  CHECK_H5(H5Awrite(attr.get(), type.get(), value.c_str()));
}

void write_int_attribute(hid_t obj, const std::string& name, long long value) {
  Id space(CHECK_H5(H5Screate(H5S_SCALAR)));
  Id attr(CHECK_H5(H5Acreate2(obj, name.c_str(), H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT)));
  CHECK_H5(H5Awrite(attr.get(), H5T_NATIVE_LLONG, &value));
}

void write_double_attribute(hid_t obj, const std::string& name, const std::vector<double>& values) {
  const hsize_t n = values.size();
  Id space(n == 1 ? CHECK_H5(H5Screate(H5S_SCALAR)) : CHECK_H5(H5Screate_simple(1, &n, nullptr)));
  Id attr(CHECK_H5(H5Acreate2(obj, name.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT)));
  CHECK_H5(H5Awrite(attr.get(), H5T_NATIVE_DOUBLE, values.data()));
}

Id create_dataset(hid_t loc, const std::string& name, hid_t type, const std::vector<hsize_t>& shape, hsize_t chunk_rows,
                  int gzip) {
  Id space(CHECK_H5(H5Screate_simple(static_cast<int>(shape.size()), shape.data(), nullptr)));
  Id dcpl(CHECK_H5(H5Pcreate(H5P_DATASET_CREATE)));
  std::vector<hsize_t> chunk = shape;
  chunk[0] = std::max<hsize_t>(1, std::min(chunk_rows, shape[0]));
  CHECK_H5(H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()));
  if (gzip > 0) {
    if (H5Tget_size(type) > 1) CHECK_H5(H5Pset_shuffle(dcpl.get()));  // byte shuffling helps multi-byte types only
    CHECK_H5(H5Pset_deflate(dcpl.get(), static_cast<unsigned>(gzip)));
  }
  return Id(CHECK_H5(H5Dcreate2(loc, name.c_str(), type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT)));
}

namespace {
// A contiguous 1-D dataset of n elements (intermediate groups created); only `writer` writes them.
void write_vector(hid_t loc, const std::string& name, hid_t file_type, hid_t mem_type, hsize_t n, const void* data,
                  bool writer) {
  Id space(CHECK_H5(H5Screate_simple(1, &n, nullptr)));
  Id lcpl(CHECK_H5(H5Pcreate(H5P_LINK_CREATE)));
  CHECK_H5(H5Pset_create_intermediate_group(lcpl.get(), 1));
  Id d(CHECK_H5(H5Dcreate2(loc, name.c_str(), file_type, space.get(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT)));
  if (writer && n > 0) CHECK_H5(H5Dwrite(d.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
}
// The 1-D dataset `name`, opened after checking that it exists and holds numbers of `cls`.
Id open_vector(hid_t loc, const std::string& name, H5T_class_t cls, const char* what, hsize_t* n) {
  if (!has_path(loc, name)) throw Error(ExitCode::bad_input, Scope::every_rank, "dataset " + name + " missing");
  Id d(CHECK_H5(H5Dopen2(loc, name.c_str(), H5P_DEFAULT)));
  Id type(CHECK_H5(H5Dget_type(d.get())));
  const auto shape = dataset_shape(d.get());
  if (H5Tget_class(type.get()) != cls || (cls == H5T_INTEGER && H5Tget_size(type.get()) != 1) || shape.size() != 1)
    throw Error(ExitCode::bad_input, Scope::every_rank, "dataset " + name + " is not a 1-D array of " + what);
  *n = shape[0];
  return d;
}
}  // namespace

bool has_path(hid_t loc, const std::string& name) {
  for (std::size_t slash = name.find('/'); slash != std::string::npos; slash = name.find('/', slash + 1))
    if (!has_link(loc, name.substr(0, slash))) return false;  // (H5Lexists fails, not false, below a missing group)
  return has_link(loc, name);
}

void write_bytes(hid_t loc, const std::string& name, const std::string& bytes, bool writer) {
  write_vector(loc, name, H5T_STD_U8LE, H5T_NATIVE_UCHAR, bytes.size(), bytes.data(), writer);
}

std::string read_bytes(hid_t loc, const std::string& name) {
  hsize_t n = 0;
  Id d = open_vector(loc, name, H5T_INTEGER, "bytes", &n);
  std::string out(static_cast<std::size_t>(n), '\0');
  if (!out.empty()) CHECK_H5(H5Dread(d.get(), H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()));
  return out;
}

void write_doubles(hid_t loc, const std::string& name, const std::vector<double>& values, bool writer) {
  write_vector(loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, values.size(), values.data(), writer);
}

std::vector<double> read_doubles(hid_t loc, const std::string& name) {
  hsize_t n = 0;
  Id d = open_vector(loc, name, H5T_FLOAT, "floating-point numbers", &n);
  if (n > (hsize_t{1} << 30))
    throw Error(ExitCode::bad_input, Scope::every_rank, "dataset " + name + " has " + std::to_string(n) + " values");
  std::vector<double> out(static_cast<std::size_t>(n));
  if (!out.empty()) CHECK_H5(H5Dread(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()));
  return out;
}

namespace {
Id row_selection(hid_t dataset, hsize_t first, hsize_t count, Id* mem_space) {
  const auto shape = dataset_shape(dataset);
  Id space(CHECK_H5(H5Dget_space(dataset)));
  std::vector<hsize_t> start(shape.size(), 0), len = shape;
  start[0] = first;
  len[0] = count;
  CHECK_H5(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, len.data(), nullptr));
  *mem_space = Id(CHECK_H5(H5Screate_simple(static_cast<int>(len.size()), len.data(), nullptr)));
  return space;
}
}  // namespace

void read_rows(hid_t dataset, hid_t mem_type, hsize_t first, hsize_t count, void* out) {
  if (count == 0) return;
  Id mem;
  Id file = row_selection(dataset, first, count, &mem);
  CHECK_H5(H5Dread(dataset, mem_type, mem.get(), file.get(), H5P_DEFAULT, out));
}

void read_box(hid_t dataset, hid_t mem_type, const std::vector<hsize_t>& start, const std::vector<hsize_t>& count,
              void* out) {
  Id space(CHECK_H5(H5Dget_space(dataset)));
  HPCT_CHECK(
      static_cast<std::size_t>(H5Sget_simple_extent_ndims(space.get())) == start.size() && start.size() == count.size(),
      "read_box: the hyperslab's rank differs from the dataset's");
  CHECK_H5(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr));
  Id mem(CHECK_H5(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr)));
  CHECK_H5(H5Dread(dataset, mem_type, mem.get(), space.get(), H5P_DEFAULT, out));
}

void write_rows(hid_t dataset, hid_t mem_type, hsize_t first, hsize_t count, const void* in) {
  if (count == 0) return;
  Id mem;
  Id file = row_selection(dataset, first, count, &mem);
  CHECK_H5(H5Dwrite(dataset, mem_type, mem.get(), file.get(), H5P_DEFAULT, in));
}

}  // namespace hpctrain::h5
