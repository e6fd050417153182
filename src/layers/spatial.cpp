// Spatial parallelism's exchanges (layers/spatial.hpp).
#include "hpctrain/layers/spatial.hpp"

#include <vector>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain {

namespace {
std::size_t count(const Tensor& t) { return static_cast<std::size_t>(t.numel()); }
}  // namespace

void fill_halos(Communicator& sp, const Halo& h, Tensor& box, HaloBuffers& b) {
  const int r = sp.rank(), s = sp.size();
  const std::int64_t n = h.box();
  HPCT_CHECK(h.depth >= h.lo && h.depth >= h.hi, "spatial halo deeper than the slab");
  std::vector<Request> pending;
  if (r > 0 && h.lo > 0) pending.push_back(sp.irecv(b.from_prev.data(), count(b.from_prev), DType::f32, r - 1));
  if (r + 1 < s && h.hi > 0) pending.push_back(sp.irecv(b.from_next.data(), count(b.from_next), DType::f32, r + 1));
  if (r > 0 && h.hi > 0) {  // (the previous rank's hi halo: this slab's first hi planes)
    copy_planes(box, n, h.lo, b.to_prev, h.hi, 0, h.hi, h.plane, false);
    pending.push_back(sp.isend(b.to_prev.data(), count(b.to_prev), DType::f32, r - 1));
  }
  if (r + 1 < s && h.lo > 0) {  // (the next rank's lo halo: this slab's last lo planes)
    copy_planes(box, n, h.depth, b.to_next, h.lo, 0, h.lo, h.plane, false);
    pending.push_back(sp.isend(b.to_next.data(), count(b.to_next), DType::f32, r + 1));
  }
  for (Request& q : pending) q->wait();
  place_halos(h, r, s, box, b);
}

void place_halos(const Halo& h, int rank, int size, Tensor& box, const HaloBuffers& b) {
  const std::int64_t n = h.box();
  if (rank > 0 && h.lo > 0) copy_planes(b.from_prev, h.lo, 0, box, n, 0, h.lo, h.plane, false);
  if (rank + 1 < size && h.hi > 0) copy_planes(b.from_next, h.hi, 0, box, n, h.lo + h.depth, h.hi, h.plane, false);
}

void return_halo_gradients(Communicator& sp, const Halo& h, Tensor& dbox, HaloBuffers& b) {
  const int r = sp.rank(), s = sp.size();
  const std::int64_t n = h.box();
  std::vector<Request> pending;
  // (the buffers change roles: to_prev carries lo planes now, from_prev hi; sizes match by construction)
  Tensor up = b.from_prev, down = b.from_next, in_prev = b.to_prev, in_next = b.to_next;
  if (r > 0 && h.hi > 0) pending.push_back(sp.irecv(in_prev.data(), count(in_prev), DType::f32, r - 1));
  if (r + 1 < s && h.lo > 0) pending.push_back(sp.irecv(in_next.data(), count(in_next), DType::f32, r + 1));
  if (r > 0 && h.lo > 0) {
    copy_planes(dbox, n, 0, up, h.lo, 0, h.lo, h.plane, false);
    pending.push_back(sp.isend(up.data(), count(up), DType::f32, r - 1));
  }
  if (r + 1 < s && h.hi > 0) {
    copy_planes(dbox, n, h.lo + h.depth, down, h.hi, 0, h.hi, h.plane, false);
    pending.push_back(sp.isend(down.data(), count(down), DType::f32, r + 1));
  }
  for (Request& q : pending) q->wait();
  if (r > 0 && h.hi > 0) copy_planes(in_prev, h.hi, 0, dbox, n, h.lo, h.hi, h.plane, true);
  if (r + 1 < s && h.lo > 0) copy_planes(in_next, h.lo, 0, dbox, n, h.depth, h.lo, h.plane, true);
}

void gather_slabs(Communicator& sp, const Tensor& slab, std::int64_t depth, std::int64_t plane, Tensor& gathered,
                  Tensor& whole) {
  const int s = sp.size();
  sp.allgather(slab.data(), gathered.data(), count(slab), DType::f32);
  for (int r = 0; r < s; ++r) {
    const Tensor part = gathered.view(r * slab.numel(), {slab.numel()});
    copy_planes(part, depth, 0, whole, depth * s, r * depth, depth, plane, false);
  }
}

void slab_of(const Tensor& whole, std::int64_t depth, std::int64_t plane, int rank, int size, Tensor& slab) {
  copy_planes(whole, depth * size, rank * depth, slab, depth, 0, depth, plane, false);
}

}  // namespace hpctrain
