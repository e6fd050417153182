// Implementation of the shard writer (data/shard_writer.hpp).
#include "hpctrain/data/shard_writer.hpp"

#include <cstdio>
#include <mutex>

#include "hpctrain/core/error.hpp"

namespace hpctrain {

namespace {
hid_t file_type(SampleType t) {
  switch (t) {
    case SampleType::u8: return H5T_STD_U8LE;
    case SampleType::f16: return H5T_IEEE_F32LE;  // replaced below by a 16-bit float type
    case SampleType::f32: return H5T_IEEE_F32LE;
    case SampleType::i32: return H5T_STD_I32LE;
    case SampleType::u16: return H5T_STD_U16LE;
  }
  return H5T_STD_U8LE;
}
hid_t memory_type(SampleType t) {
  switch (t) {
    case SampleType::u8: return H5T_NATIVE_UINT8;
    case SampleType::f16: return H5T_NATIVE_UINT16;
    case SampleType::f32: return H5T_NATIVE_FLOAT;
    case SampleType::i32: return H5T_NATIVE_INT32;
    case SampleType::u16: return H5T_NATIVE_UINT16;
  }
  return H5T_NATIVE_UINT8;
}
}  // namespace

ShardWriter::ShardWriter(const std::string& path, const ShardSpec& spec, std::int64_t rows)
    : path_(path), tmp_(path + ".tmp"), spec_(spec), rows_(rows) {
  std::lock_guard<std::mutex> lock(h5::lock());
  file_ = h5::create_file(tmp_);
  h5::write_string_attribute(file_.get(), "format", kDatasetFormat);
  h5::write_int_attribute(file_.get(), "version", kDatasetVersion);
  h5::write_int_attribute(file_.get(), "num_classes", spec.num_classes);
  h5::write_double_attribute(file_.get(), spec.standardize ? "mean" : "scale", spec.norm_a);
  h5::write_double_attribute(file_.get(), spec.standardize ? "std" : "offset", spec.norm_b);
  if (!spec.target_names.empty()) h5::write_string_attribute(file_.get(), "target_names", spec.target_names);
  if (!spec.transform.empty()) h5::write_string_attribute(file_.get(), "transform", spec.transform);

  std::vector<hsize_t> shape{static_cast<hsize_t>(rows)};
  for (auto d : spec.sample_shape) shape.push_back(static_cast<hsize_t>(d));
  h5::Id half;
  hid_t stype = file_type(spec.type);
  if (spec.type == SampleType::f16) {  // IEEE binary16: 1 sign, 5 exponent, 10 mantissa bits
    half = h5::Id(CHECK_H5(H5Tcopy(H5T_IEEE_F32LE)));
    CHECK_H5(H5Tset_fields(half.get(), 15, 10, 5, 0, 10));
    CHECK_H5(H5Tset_size(half.get(), 2));
    CHECK_H5(H5Tset_ebias(half.get(), 15));
    stype = half.get();
  }
  samples_ = h5::create_dataset(file_.get(), "samples", stype, shape, static_cast<hsize_t>(spec.chunk_rows), spec.gzip);
  std::vector<hsize_t> lshape{static_cast<hsize_t>(rows)};
  if (!spec.classification) lshape.push_back(static_cast<hsize_t>(spec.label_width));
  labels_ = h5::create_dataset(file_.get(), "labels", spec.classification ? H5T_STD_I32LE : H5T_IEEE_F32LE, lshape,
                               static_cast<hsize_t>(std::max<std::int64_t>(spec.chunk_rows, 1024)), spec.gzip);
}

ShardWriter::~ShardWriter() {
  if (!file_.valid()) return;
  std::lock_guard<std::mutex> lock(h5::lock());
  labels_.reset();
  samples_.reset();
  file_.reset();
  std::remove(tmp_.c_str());
}

void ShardWriter::append(std::int64_t rows, const void* samples, const void* labels) {
  HPCT_CHECK(written_ + rows <= rows_, "shard " + path_ + ": more rows appended than declared");
  std::lock_guard<std::mutex> lock(h5::lock());
  // f16 samples arrive as raw half bits; store them bit for bit through a matching memory type.
  h5::Id half;
  hid_t mtype = memory_type(spec_.type);
  if (spec_.type == SampleType::f16) {
    half = h5::Id(CHECK_H5(H5Dget_type(samples_.get())));
    mtype = half.get();
  }
  h5::write_rows(samples_.get(), mtype, static_cast<hsize_t>(written_), static_cast<hsize_t>(rows), samples);
  h5::write_rows(labels_.get(), spec_.classification ? H5T_NATIVE_INT32 : H5T_NATIVE_FLOAT,
                 static_cast<hsize_t>(written_), static_cast<hsize_t>(rows), labels);
  written_ += rows;
}

void ShardWriter::close() {
  HPCT_CHECK(written_ == rows_,
             "shard " + path_ + ": " + std::to_string(written_) + " of " + std::to_string(rows_) + " rows written");
  std::lock_guard<std::mutex> lock(h5::lock());
  labels_.reset();
  samples_.reset();
  CHECK_H5(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL));
  file_.reset();
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0)
    throw Error(ExitCode::internal, Scope::this_rank, "cannot rename " + tmp_ + " to " + path_);
}

}  // namespace hpctrain
