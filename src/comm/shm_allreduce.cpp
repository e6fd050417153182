// Allreduce through node-shared memory (comm/shm_allreduce.hpp).
#include "hpctrain/comm/shm_allreduce.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "hpctrain/core/error.hpp"

namespace hpctrain {

ShmAllreduce::ShmAllreduce(MPI_Comm comm, std::size_t slot_bytes) {
  CHECK_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &comm_));
  CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
  CHECK_MPI(MPI_Comm_size(comm_, &size_));
  CHECK_MPI(MPI_Comm_split(comm, rank_ == 0 ? 0 : MPI_UNDEFINED, 0, &leaders_));
  int first = rank_ == 0 ? 1 : 0;
  CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_SUM, comm));
  nodes_ = first;
  CHECK_MPI(MPI_Allreduce(&size_, &widest_, 1, MPI_INT, MPI_MAX, comm));
  // Across nodes every piece costs a network allreduce among the leaders: larger pieces.
  capacity_ = (nodes_ > 1 ? std::max(slot_bytes, std::size_t{4} << 20) : slot_bytes) / sizeof(float);
  HPCT_CHECK(capacity_ > 0, "ShmAllreduce: a slot holds at least one float");
  MPI_Info info = MPI_INFO_NULL;
  CHECK_MPI(MPI_Info_create(&info));
  CHECK_MPI(MPI_Info_set(info, "alloc_shared_noncontig", "true"));  // each slot in its owner's NUMA memory
  void* mine = nullptr;
  CHECK_MPI(MPI_Win_allocate_shared(static_cast<MPI_Aint>(capacity_ * sizeof(float)), sizeof(float), info, comm_, &mine,
                                    &win_));
  CHECK_MPI(MPI_Info_free(&info));
  for (int r = 0; r < size_; ++r) {
    MPI_Aint bytes = 0;
    int unit = 0;
    void* base = nullptr;
    CHECK_MPI(MPI_Win_shared_query(win_, r, &bytes, &unit, &base));
    slots_.push_back(static_cast<float*>(base));
  }
  CHECK_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_));  // (for MPI_Win_sync)
}

ShmAllreduce::~ShmAllreduce() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (win_ != MPI_WIN_NULL) {
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
  }
  if (leaders_ != MPI_COMM_NULL) MPI_Comm_free(&leaders_);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void ShmAllreduce::sync() {
  CHECK_MPI(MPI_Win_sync(win_));
  CHECK_MPI(MPI_Barrier(comm_));
  CHECK_MPI(MPI_Win_sync(win_));
}

void ShmAllreduce::sum(const float* in, float* out, std::size_t count, float scale) {
  const auto p = static_cast<std::size_t>(size_), me = static_cast<std::size_t>(rank_);
  for (std::size_t off = 0; off < count; off += capacity_) {
    const std::size_t n = std::min(capacity_, count - off);
    std::memcpy(slots_[me], in + off, n * sizeof(float));
    sync();
    const std::size_t lo = n * me / p, hi = n * (me + 1) / p;
    float* acc = slots_[0];
    for (std::size_t k = 1; k < p; ++k) {  // in rank order: the same bits on every rank
      const float* s = slots_[k];
      for (std::size_t i = lo; i < hi; ++i) acc[i] += s[i];
    }
    sync();
    if (nodes_ > 1) {  // the nodes' sums, summed by their first ranks
      if (leaders_ != MPI_COMM_NULL)
        CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, acc, static_cast<int>(n), MPI_FLOAT, MPI_SUM, leaders_));
      sync();
    }
    if (scale == 1.f) {
      std::memcpy(out + off, slots_[0], n * sizeof(float));
    } else {  // an average: scaled on the way out (no pass of its own over the result)
      const float* sum = slots_[0];
      float* dst = out + off;
      for (std::size_t i = 0; i < n; ++i) dst[i] = sum[i] * scale;
    }
    sync();  // slot 0 is rewritten by the next piece
  }
}

void ShmAllreduce::reduce_scatter(const float* in, float* out, std::size_t count, float scale) {
  reduce_scatter_of(in, out, count, scale);
}

void ShmAllreduce::reduce_scatter(const std::int64_t* in, std::int64_t* out, std::size_t count) {
  reduce_scatter_of(in, out, count, 1.f);
}

template <typename T>
void ShmAllreduce::reduce_scatter_of(const T* in, T* out, std::size_t count, float scale) {
  HPCT_CHECK(nodes_ == 1, "ShmAllreduce::reduce_scatter spans one node");
  const auto p = static_cast<std::size_t>(size_), me = static_cast<std::size_t>(rank_);
  const std::size_t m = std::max<std::size_t>(1, capacity_ * sizeof(float) / sizeof(T) / p);  // per block and piece
  auto slot = [&](std::size_t k) { return reinterpret_cast<T*>(slots_[k]); };
  for (std::size_t off = 0; off < count; off += m) {
    const std::size_t n = std::min(m, count - off);
    for (std::size_t r = 0; r < p; ++r)  // slot: part r of the piece = block r's [off, off + n)
      std::memcpy(slot(me) + r * m, in + r * count + off, n * sizeof(T));
    sync();
    T* dst = out + off;  // (in place: this rank's part was copied into its slot above)
    std::memcpy(dst, slot(0) + me * m, n * sizeof(T));
    for (std::size_t k = 1; k < p; ++k) {  // in rank order
      const T* s = slot(k) + me * m;
      for (std::size_t i = 0; i < n; ++i) dst[i] += s[i];
    }
    if constexpr (std::is_floating_point_v<T>)
      if (scale != 1.f)  // an average: scaled while the piece is in cache
        for (std::size_t i = 0; i < n; ++i) dst[i] *= scale;
    sync();  // the slots are rewritten by the next piece
  }
}

void ShmAllreduce::allgather(const float* in, float* out, std::size_t count) {
  HPCT_CHECK(nodes_ == 1, "ShmAllreduce::allgather spans one node");
  const auto p = static_cast<std::size_t>(size_), me = static_cast<std::size_t>(rank_);
  for (std::size_t off = 0; off < count; off += capacity_) {
    const std::size_t n = std::min(capacity_, count - off);
    std::memcpy(slots_[me], in + off, n * sizeof(float));
    sync();
    for (std::size_t r = 0; r < p; ++r) {
      float* dst = out + r * count + off;
      if (dst != in + off) std::memcpy(dst, slots_[r], n * sizeof(float));  // (in place: already there)
    }
    sync();
  }
}

}  // namespace hpctrain
