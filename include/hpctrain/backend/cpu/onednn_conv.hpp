// The CPU backend's second convolution: oneDNN's (its JIT kernels use AVX-512
// whatever OpenBLAS was told). Activations stay in our [N, C, H, W] layout at
// the boundary; inside, the data are reordered to the blocked layouts oneDNN
// picks, primitives are made once per batch size and kept. Measured against
// im2col + GEMM by tools/bench/conv_bench.cpp; which one a conv layer uses is
// [kernels] conv (docs/performance.md).
//
// Built when oneDNN (libdnnl-dev) is found; otherwise onednn_compiled() is
// false and constructing one throws.
#pragma once

#include <cstdint>
#include <memory>

namespace hpctrain::cpu {

bool onednn_compiled();
// Threads oneDNN may use (its OpenMP runtime): [kernels] threads.
void set_onednn_threads(int threads);

struct ConvGeometry {
  std::int64_t channels = 1, height = 1, width = 1;  // input, per sample
  std::int64_t out = 1, kernel = 1, pad = 0, stride = 1;
  std::int64_t out_height = 1, out_width = 1;
};

class OnednnConv {
 public:
  explicit OnednnConv(const ConvGeometry& g);
  ~OnednnConv();
  OnednnConv(const OnednnConv&) = delete;
  OnednnConv& operator=(const OnednnConv&) = delete;
  // y [n, out, Ho, Wo] = conv(x [n, C, H, W], w [out, C, k, k]) + b; with `relu`, max(0, that),
  // in the same pass (a oneDNN post-op: the model's conv + relu fusion).
  void forward(const float* x, const float* w, const float* b, float* y, std::int64_t n, bool relu = false);
  // dw, db: overwritten, or added to when `accumulate`; dx (may be null: not needed) overwritten.
  void backward(const float* x, const float* dy, const float* w, float* dw, float* db, float* dx, std::int64_t n,
                bool accumulate);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hpctrain::cpu
