// Spatial parallelism ([parallel] spatial_parallel = S, the mesh's sp; LBANN's DistConv): each
// volume [C, D, H, W] is split along its depth into S slabs of D/S planes, slab r on rank r of the
// sp group, every rank of which runs the same samples. The layers up to the first that gathers
// see this rank's slab [C, D/S, H, W]:
//   conv3d                 exchanges halo planes with its two neighbours (below) and convolves its
//                          slab padded with them; its weight gradient is this slab's share
//   maxpool3d, avgpool3d   windows that tile the slab (kernel = stride, D/S a multiple of it)
//   element-wise layers    (relu, tanh, leaky_relu, scale, ...) as they are
//   flatten                gathers the slabs (all-gather over sp) into the whole volume
//   gap3d                  sums its slabs' means over sp
// and the layers after it run whole, alike on every rank of the group. A conv3d or pool whose
// windows do not tile the slabs (a slab thinner than a pool's window, deep in the network)
// gathers its input first and runs whole: the split ends there. The trainer sums the
// gradients of the slab layers' parameters over sp (train/parallelize.cpp). docs/volumes.md.
#pragma once

#include <cstdint>

#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain {

// This rank's slab of the sp group; `split`: the layer's input is a slab (set by the model for
// the layers up to and including the one that gathers).
// What a layer does with a slab input: refuses it (none), works on it (slabs: its output is the
// output's slab), or gathers the slabs (its output is whole).
enum class SpatialRole { none, slabs, gathers };

// `role`: the layer's own answer for its slab input (Layer::spatial_role), recorded by the model.
struct SpatialSplit {
  int rank = 0, size = 1;
  bool split = false;
  SpatialRole role = SpatialRole::none;
  bool on() const { return split && size > 1; }
  bool slabs() const { return on() && role == SpatialRole::slabs; }      // works on its slab
  bool gathers() const { return on() && role == SpatialRole::gathers; }  // gathers, then runs whole
};

// A box [blocks, lo + depth + hi, plane]: this rank's `depth` slab planes (box planes [lo, lo +
// depth)) with `lo` halo planes before them and `hi` after (a convolution's padding before and
// after along the depth: with 'same' outputs, exactly the planes the slab's outputs read from
// its neighbours' slabs). depth >= lo, hi.
struct Halo {
  std::int64_t lo = 0, hi = 0, depth = 0, plane = 0;
  std::int64_t box() const { return lo + depth + hi; }
};

// The exchange's buffers, [blocks, n, plane]: what goes to and comes from the previous rank
// (n = hi sent, lo received) and the next (n = lo sent, hi received).
struct HaloBuffers {
  Tensor to_prev, to_next, from_prev, from_next;
};

// Forward: box planes [0, lo) from the previous rank's last lo slab planes, [lo + depth, box)
// from the next rank's first hi; at the volume's ends they are left as they are (zeros: the
// convolution's padding). Non-blocking sends and receives to both neighbours at once; the
// received planes stay in from_prev / from_next (a backward rebuilds the box from them).
void fill_halos(Communicator& sp, const Halo& h, Tensor& box, HaloBuffers& b);
// Copies received halo planes (fill_halos's from_prev / from_next) into the box again.
void place_halos(const Halo& h, int rank, int size, Tensor& box, const HaloBuffers& b);
// Backward: the gradient of the box's halo planes belongs to the neighbours' slabs: sent to them,
// and theirs added into this rank's slab planes of `dbox` (its halo planes are then stale).
void return_halo_gradients(Communicator& sp, const Halo& h, Tensor& dbox, HaloBuffers& b);

// The whole volume [rows, C, S x depth, plane] from every rank's slab [rows, C, depth, plane]
// (all-gather over sp into `gathered` [S, rows x C x depth x plane], then regrouped into `whole`).
void gather_slabs(Communicator& sp, const Tensor& slab, std::int64_t depth, std::int64_t plane, Tensor& gathered,
                  Tensor& whole);
// This rank's slab of a whole volume's gradient (no communication: every rank holds it whole).
void slab_of(const Tensor& whole, std::int64_t depth, std::int64_t plane, int rank, int size, Tensor& slab);

}  // namespace hpctrain
