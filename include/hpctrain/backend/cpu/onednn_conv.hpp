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
  // A 3-D convolution (conv3d) when depth > 0: [C, D, H, W] -> [out, Do, Ho, Wo], a k x k x k kernel.
  std::int64_t depth = 0, out_depth = 1;
  std::int64_t pad_after = -1;  // the padding after each axis ('same' for an even kernel); -1: pad
  bool volume() const { return depth > 0; }
  std::int64_t pad_end() const { return pad_after < 0 ? pad : pad_after; }
  std::int64_t weight_elements() const { return out * channels * kernel * kernel * (volume() ? kernel : 1); }
};

class OnednnConv {
 public:
  explicit OnednnConv(const ConvGeometry& g);
  ~OnednnConv();
  OnednnConv(const OnednnConv&) = delete;
  OnednnConv& operator=(const OnednnConv&) = delete;
  // y [n, out, Ho, Wo] = conv(x [n, C, H, W], w [out, C, k, k]) + b (volumes: [n, out, Do, Ho, Wo],
  // [n, C, D, H, W], [out, C, k, k, k], padding before and after); with `relu`, max(0, that),
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
