// Depth slabs of volume samples for [parallel] spatial_parallel (data/dataset.hpp DepthSlab,
// data/store.hpp SlabStore): the checks, the copy out of a whole sample, the node cache's slab and
// the store that reads each slab from its shard as an HDF5 hyperslab.
#include <cstring>
#include <mutex>

#include "hpctrain/core/error.hpp"
#include "hpctrain/data/store.hpp"

namespace hpctrain {

void check_depth_slabs(const SplitIndex& split, const std::string& path, int size) {
  if (size <= 1) return;
  const auto& s = split.sample_shape;
  std::string shape;
  for (auto d : s) shape += (shape.empty() ? "[" : ", ") + std::to_string(d);
  shape += "]";
  if (split.tokens || s.size() != 4)
    throw bad_input("[parallel] spatial_parallel = " + std::to_string(size) + " splits volumes [C, D, H, W]; " + path +
                    "/" + split.name + " holds samples " + (split.tokens ? "of tokens" : shape));
  if (s[1] % size != 0)
    throw bad_input("[parallel] spatial_parallel = " + std::to_string(size) + " does not divide the depth " +
                    std::to_string(s[1]) + " of " + path + "/" + split.name + "'s samples " + shape +
                    " (use a divisor of it)");
}

std::vector<std::int64_t> slab_shape(const std::vector<std::int64_t>& sample, int size) {
  std::vector<std::int64_t> out = sample;
  if (size > 1 && out.size() == 4) out[1] /= size;
  return out;
}

void copy_slab(const SplitIndex& split, const DepthSlab& slab, const unsigned char* whole, unsigned char* out) {
  const auto& s = split.sample_shape;
  const auto elem = static_cast<std::size_t>(sample_type_size(split.sample_type));
  const auto plane = static_cast<std::size_t>(s[2] * s[3]) * elem, depth = static_cast<std::size_t>(s[1]);
  const std::size_t planes = depth / static_cast<std::size_t>(slab.size), first = planes * slab.rank;
  for (std::size_t c = 0; c < static_cast<std::size_t>(s[0]); ++c)
    std::memcpy(out + c * planes * plane, whole + (c * depth + first) * plane, planes * plane);
}

bool NodeCache::get_slab(std::int64_t index, const DepthSlab& slab, void* sample, void* label) {
  if (sample)
    copy_slab(split_, slab, base_ + static_cast<std::size_t>(index) * sample_bytes_,
              static_cast<unsigned char*>(sample));
  if (label) get(index, nullptr, label);
  return true;
}

// ---- SlabStore ----------------------------------------------------------------------------

SlabStore::SlabStore(const SplitIndex& split, bool samples, bool labels) : split_(split) {
  std::lock_guard<std::mutex> lock(h5::lock());
  open_.resize(split.shards.size());
  for (std::size_t i = 0; i < split.shards.size(); ++i) {
    OpenShard& o = open_[i];
    o.file = h5::open_file(split.shards[i].path);
    if (samples) {
      o.samples = h5::Id(CHECK_H5(H5Dopen2(o.file.get(), "samples", H5P_DEFAULT)));
      o.raw_type = raw_sample_type(o.samples.get(), split.sample_type, &o.holder);
    }
    if (labels) o.labels = h5::Id(CHECK_H5(H5Dopen2(o.file.get(), "labels", H5P_DEFAULT)));
  }
}

void SlabStore::get(std::int64_t index, void* sample, void* label) { get_slab(index, DepthSlab{}, sample, label); }

bool SlabStore::get_slab(std::int64_t index, const DepthSlab& slab, void* sample, void* label) {
  const Shard& s = split_.shard_of(index);
  const OpenShard& o = open_[static_cast<std::size_t>(&s - split_.shards.data())];
  const auto row = static_cast<hsize_t>(index - s.first);
  std::lock_guard<std::mutex> lock(h5::lock());
  if (sample) {
    const auto& shape = split_.sample_shape;
    const auto planes = static_cast<hsize_t>(shape[1] / slab.size);
    const std::vector<hsize_t> start{row, 0, planes * static_cast<hsize_t>(slab.rank), 0, 0},
        count{1, static_cast<hsize_t>(shape[0]), planes, static_cast<hsize_t>(shape[2]),
              static_cast<hsize_t>(shape[3])};
    h5::read_box(o.samples.get(), o.raw_type, start, count, sample);
    read_ += static_cast<std::uint64_t>(split_.sample_bytes() / slab.size);
  }
  if (label) {
    const hid_t type = split_.classification ? H5T_NATIVE_INT32 : H5T_NATIVE_FLOAT;
    h5::read_rows(o.labels.get(), type, row, 1, label);
    read_ += label_bytes(split_);
  }
  return true;
}

}  // namespace hpctrain
