// Shared by the reference dump programs (gpt_dump, volume_dump): a float32 dataset written whole.
#pragma once

#include <string>
#include <vector>

#include "hpctrain/io/h5.hpp"
#include "hpctrain/tensor/tensor.hpp"

namespace dump {

inline void write(hid_t loc, const std::string& name, const std::vector<float>& v, const hpctrain::Shape& shape) {
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  if (dims.empty()) dims = {1};
  hpctrain::h5::Id d = hpctrain::h5::create_dataset(loc, name, H5T_IEEE_F32LE, dims, dims[0], 0);
  hpctrain::h5::write_rows(d.get(), H5T_NATIVE_FLOAT, 0, dims[0], v.data());
}

}  // namespace dump
