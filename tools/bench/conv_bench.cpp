// conv-bench: the two CPU convolutions side by side, im2col + GEMM and oneDNN,
// through the conv layer exactly as training calls it (forward, then backward
// with the input gradient unless the layer is the first), for the convolutions
// of the example CNNs at the per-rank batch sizes of 1 and 2 ranks (256, 128).
// Best of --repeats timed runs after one warm-up; one thread ([kernels] threads = 1).
//   build/conv-bench [--repeats N] [--smoke] [--bf16] [--volumes]
// --volumes: conv3d instead, the five convolutions of inputs/cosmoflow_32.ini ('same' padding, an
// even kernel) at per-rank batches of 16 and 32: the direct loops ("im2col" column) against
// oneDNN (tools/bench/conv3d_vs_torch.sh puts PyTorch's beside them).
// --bf16: both in bf16 math ([precision] dtype = bf16: bf16 GEMMs, oneDNN on bf16 operands).
// It is what [kernels] conv = auto's rule comes from (docs/performance.md).
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "hpctrain/backend/cpu/onednn_conv.hpp"
#include "hpctrain/backend/cpu/onednn_matmul.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"

using namespace hpctrain;

namespace {
struct Case {
  const char* where;
  std::int64_t c, hw, out, k, pad;
  bool first;           // the model's first layer: no input gradient
  bool volume = false;  // conv3d(out, k, pad=same) on [c, hw, hw, hw]
};

// A conv layer of case `cs` with `impl`, configured, its parameters (deterministic values) and
// gradients bound from `alloc`.
struct BenchConv {
  std::unique_ptr<Layer> conv;
  Shape out;
  std::vector<Tensor> p, g;
};
BenchConv make_conv(ConvImpl impl, const Case& cs, Allocator& alloc) {
  LayerRegistry r;
  register_builtin_layers(r, LayerOptions{impl});
  BenchConv b;
  const std::string args = std::to_string(cs.out) + "," + std::to_string(cs.k) + ",pad=";
  b.conv = r.make(
      parse_layers(cs.volume ? "conv3d(" + args + "same)" : "conv(" + args + std::to_string(cs.pad) + ")").front());
  const Shape in = cs.volume ? Shape{cs.c, cs.hw, cs.hw, cs.hw} : Shape{cs.c, cs.hw, cs.hw};
  b.out = b.conv->output_shape(in);
  b.conv->configure(in);
  for (const auto& s : b.conv->param_specs(in)) {
    b.p.push_back(Tensor::zeros(s.shape, alloc));
    b.g.push_back(Tensor::zeros(s.shape, alloc));
    for (std::int64_t i = 0; i < b.p.back().numel(); ++i)
      b.p.back().data()[i] = 0.01f * static_cast<float>(i % 13) - 0.06f;
  }
  b.conv->bind(b.p, b.g);
  return b;
}

double run_ms(ConvImpl impl, const Case& cs, std::int64_t n, int repeats, double* checksum) {
  Allocator alloc;
  BenchConv b = make_conv(impl, cs, alloc);
  Layer* conv = b.conv.get();
  const Shape& out = b.out;
  std::vector<Tensor>& g = b.g;
  Shape xs{n, cs.c, cs.hw, cs.hw}, ys{n};
  if (cs.volume) xs.push_back(cs.hw);
  ys.insert(ys.end(), out.begin(), out.end());
  Tensor x = Tensor::zeros(xs, alloc), y = Tensor::zeros(ys, alloc);
  Tensor dy = Tensor::zeros(y.shape(), alloc), dx = cs.first ? Tensor() : Tensor::zeros(x.shape(), alloc);
  for (std::int64_t i = 0; i < x.numel(); ++i) x.data()[i] = 0.001f * static_cast<float>(i % 97);
  for (std::int64_t i = 0; i < dy.numel(); ++i) dy.data()[i] = 0.001f * static_cast<float>(i % 89) - 0.04f;
  double best = 1e30;
  for (int k = 0; k <= repeats; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    conv->forward(x, y);
    conv->set_accumulate_grads(false);
    conv->backward(x, y, dy, dx);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (k > 0) best = std::min(best, ms);  // run 0 is the warm-up (oneDNN makes its primitives there)
  }
  double s = 0;
  for (std::int64_t i = 0; i < y.numel(); ++i) s += y.data()[i];
  for (std::int64_t i = 0; i < g[0].numel(); ++i) s += g[0].data()[i];
  *checksum = s;
  return best;
}
// Forward of conv + relu on oneDNN, best of `repeats`: the two layers one after the other, or
// fused (ReLU as the convolution's post-op, Layer::forward_fused). `z`: the output, for the check.
double relu_ms(const Case& cs, std::int64_t n, int repeats, bool fused, std::vector<float>& z_out) {
  Allocator alloc;
  BenchConv b = make_conv(ConvImpl::onednn, cs, alloc);
  Layer* conv = b.conv.get();
  const Shape& out = b.out;
  Tensor x = Tensor::zeros({n, cs.c, cs.hw, cs.hw}, alloc), y = Tensor::zeros({n, out[0], out[1], out[2]}, alloc);
  Tensor z = Tensor::zeros(y.shape(), alloc);
  for (std::int64_t i = 0; i < x.numel(); ++i) x.data()[i] = 0.001f * static_cast<float>(i % 97) - 0.03f;
  double best = 1e30;
  for (int k = 0; k <= repeats; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    if (fused) {
      conv->forward_fused(x, y, Activation::relu, z);
    } else {
      conv->forward(x, y);
      activation_forward(Activation::relu, y, z);
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (k > 0) best = std::min(best, ms);
  }
  z_out.assign(z.data(), z.data() + z.numel());
  return best;
}
}  // namespace

int main(int argc, char** argv) {
  int repeats = 5;
  bool smoke = false, bf16 = false, volumes = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--smoke")) {
      smoke = true;
    } else if (!std::strcmp(argv[i], "--bf16")) {
      bf16 = true;
    } else if (!std::strcmp(argv[i], "--volumes")) {
      volumes = true;
    } else if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc) {
      repeats = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: conv-bench [--repeats N] [--smoke] [--bf16] [--volumes]\n");
      return 2;
    }
  }
  openblas_set_num_threads(1);
  cpu::set_onednn_threads(1);
  cpu::set_bf16_math(bf16);
  const std::vector<Case> planes{{"mnist_cnn conv 1", 1, 28, 32, 3, 1, true},
                                 {"mnist_cnn conv 2", 32, 14, 64, 3, 1, false},
                                 {"mnist_resnet res block", 16, 28, 16, 3, 1, false},
                                 {"mnist_resnet conv 32", 32, 14, 32, 3, 1, false}};
  const std::vector<Case> cubes{{"cosmoflow_32 conv3d 0", 1, 32, 8, 2, 0, true, true},
                                {"cosmoflow_32 conv3d 1", 8, 16, 16, 2, 0, false, true},
                                {"cosmoflow_32 conv3d 2", 16, 8, 32, 2, 0, false, true},
                                {"cosmoflow_32 conv3d 3", 32, 4, 64, 2, 0, false, true},
                                {"cosmoflow_32 conv3d 4", 64, 2, 128, 2, 0, false, true}};
  const std::vector<Case>& cases = volumes ? cubes : planes;
  const std::vector<std::int64_t> batches = smoke     ? std::vector<std::int64_t>{8}
                                            : volumes ? std::vector<std::int64_t>{16, 32}
                                                      : std::vector<std::int64_t>{256, 128};
  if (smoke) repeats = 1;
  const bool onednn = cpu::onednn_compiled();
  std::printf("conv-bench: forward + backward of one conv layer, best of %d, 1 thread, %s math; %s\n", repeats,
              bf16 ? "bf16" : "float32", onednn ? "oneDNN built in" : "no oneDNN in this build");
  std::printf("%-24s %-16s %6s %12s %12s %10s %10s %8s\n", "layer", "in -> out", "batch", "im2col ms", "oneDNN ms",
              "im2col GF/s", "oneDNN GF/s", "faster");
  bool ok = true;
  try {
    for (const Case& c : cases)
      for (const std::int64_t n : batches) {
        // Multiply-adds: forward, weight gradient, input gradient (not for the first layer).
        const double cube = c.volume ? static_cast<double>(c.hw * c.k) : 1.0;
        const double macs = static_cast<double>(n * c.out * c.hw * c.hw * c.c * c.k * c.k) * cube * (c.first ? 2 : 3);
        double s1 = 0, s2 = 0;
        const double a = run_ms(ConvImpl::im2col, c, n, repeats, &s1);
        const double b = onednn ? run_ms(ConvImpl::onednn, c, n, repeats, &s2) : 0;
        if (onednn && std::abs(s1 - s2) > 1e-3 * std::max(1.0, std::abs(s1))) ok = false;  // both compute the same
        char shape[40];
        std::snprintf(shape, sizeof(shape), "%lldx%lld^%d -> %lld", static_cast<long long>(c.c),
                      static_cast<long long>(c.hw), c.volume ? 3 : 2, static_cast<long long>(c.out));
        std::printf("%-24s %-16s %6lld %12.2f %12s %10.1f %10s %8s\n", c.where, shape, static_cast<long long>(n), a,
                    onednn ? std::to_string(b).substr(0, 6).c_str() : "-", 2 * macs / a / 1e6,
                    onednn ? std::to_string(2 * macs / b / 1e6).substr(0, 6).c_str() : "-",
                    !onednn ? "-" : (b < a ? "oneDNN" : "im2col"));
      }
    if (onednn && !volumes) {  // conv + relu forward: two passes, or one (the model's fusion)
      std::printf("\n%-24s %-16s %6s %12s %12s %8s\n", "conv + relu forward", "in -> out", "batch", "separate ms",
                  "fused ms", "speed-up");
      for (const Case& c : cases) {
        if (c.c == 1) continue;  // (one input channel: im2col, not fused)
        for (const std::int64_t n : batches) {
          std::vector<float> z1, z2;
          const double a = relu_ms(c, n, repeats, false, z1), b = relu_ms(c, n, repeats, true, z2);
          for (std::size_t i = 0; i < z1.size(); ++i)
            if (std::abs(z1[i] - z2[i]) > 1e-5f * std::max(1.f, std::abs(z1[i]))) ok = false;
          char shape[40];
          std::snprintf(shape, sizeof(shape), "%lldx%lld^2 -> %lld", static_cast<long long>(c.c),
                        static_cast<long long>(c.hw), static_cast<long long>(c.out));
          std::printf("%-24s %-16s %6lld %12.2f %12.2f %7.2fx\n", c.where, shape, static_cast<long long>(n), a, b,
                      a / b);
        }
      }
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "conv-bench: %s\n", e.what());
    return 1;
  }
  std::printf("%s\n", ok ? "PASS (both implementations agree on outputs and weight gradients; fused relu equals "
                           "conv then relu)"
                         : "FAIL: the implementations disagree");
  return ok ? 0 : 1;
}
