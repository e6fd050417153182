// cuDNN convolution (backend/cuda/cudnn_conv.hpp). Host code only: cuDNN's
// convolution calls, on the context's stream, with plans per batch size.
// cuDNN 9 marks its descriptor-based convolution API deprecated in favour of
// the graph API; it is still the documented way for this fixed layout, so the
// deprecation warnings are silenced here and nowhere else.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#include "hpctrain/backend/cuda/cudnn_conv.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "hpctrain/backend/checks.hpp"
#include "hpctrain/backend/cuda/context.hpp"
#include "hpctrain/backend/cuda/device_api.hpp"

namespace hpctrain::cuda {

bool cudnn_compiled() { return true; }

namespace {
// A device workspace from the caching pool, released with the plan.
struct Workspace {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  explicit Workspace(std::size_t b) : bytes(b) {
    if (b) ptr = device_allocate(b);
  }
  ~Workspace() {
    if (ptr) device_release(ptr, bytes);
  }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
};

// A packed [dims...] float tensor descriptor of any rank (volumes: 5).
void set_packed(cudnnTensorDescriptor_t d, const std::vector<int>& dims) {
  std::vector<int> strides(dims.size(), 1);
  for (std::size_t i = dims.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
  CHECK_CUDNN(
      cudnnSetTensorNdDescriptor(d, CUDNN_DATA_FLOAT, static_cast<int>(dims.size()), dims.data(), strides.data()));
}

// The fastest successful result whose workspace fits the limit (cuDNN returns them fastest first).
template <typename Perf>
const Perf& pick(const std::vector<Perf>& results, int count, const char* what) {
  for (int i = 0; i < count; ++i)
    if (results[i].status == CUDNN_STATUS_SUCCESS && results[i].memory <= kWorkspaceLimit) return results[i];
  throw Error(ExitCode::internal, Scope::this_rank,
              std::string("cuDNN found no ") + what + " algorithm within the " + std::to_string(kWorkspaceLimit >> 20) +
                  " MiB workspace limit");
}
}  // namespace

struct CudnnConv::Impl {
  cpu::ConvGeometry g;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  struct Plan {
    cudnnConvolutionFwdAlgo_t fwd{};
    cudnnConvolutionBwdDataAlgo_t data{};
    cudnnConvolutionBwdFilterAlgo_t filter{};
    std::unique_ptr<Workspace> ws;
  };
  std::map<std::int64_t, Plan> plans;  // per batch size
  std::int64_t described = -1;         // batch size the descriptors x and y hold now

  explicit Impl(const cpu::ConvGeometry& geo) : g(geo) {
    // (cuDNN pads symmetrically: the layer pads an asymmetric 'same' itself, shift_volume)
    HPCT_CHECK(!g.volume() || g.pad == g.pad_end(), "cuDNN 3-D convolution with asymmetric padding");
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&x));
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&y));
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&bias));
    CHECK_CUDNN(cudnnCreateFilterDescriptor(&w));
    CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&conv));
    const auto i = [](std::int64_t v) { return backend::checked_int(v, "cuDNN convolution: a tensor dimension"); };
    if (g.volume()) {
      const int k = i(g.kernel), p = i(g.pad), s = i(g.stride);
      const int filter[5] = {i(g.out), i(g.channels), k, k, k}, pads[3] = {p, p, p}, strides[3] = {s, s, s},
                dilation[3] = {1, 1, 1};
      CHECK_CUDNN(cudnnSetFilterNdDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 5, filter));
      set_packed(bias, {1, i(g.out), 1, 1, 1});
      CHECK_CUDNN(
          cudnnSetConvolutionNdDescriptor(conv, 3, pads, strides, dilation, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
      return;
    }
    CHECK_CUDNN(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, i(g.out), i(g.channels), i(g.kernel),
                                           i(g.kernel)));
    CHECK_CUDNN(cudnnSetTensor4dDescriptor(bias, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, i(g.out), 1, 1));
    CHECK_CUDNN(cudnnSetConvolution2dDescriptor(conv, i(g.pad), i(g.pad), i(g.stride), i(g.stride), 1, 1,
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  }
  ~Impl() {
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyTensorDescriptor(bias);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(x);
  }

  Plan& plan(std::int64_t n) {
    const auto i = [](std::int64_t v) { return backend::checked_int(v, "cuDNN convolution: a tensor dimension"); };
    // Tensor cores only when the GEMMs may use them ([precision] tf32 or a reduced precision), and a
    // down-conversion to fp16 only in fp16 mode (device_api.hpp conv_math).
    const ConvMath m = conv_math(context().gemm_math());
    CHECK_CUDNN(cudnnSetConvolutionMathType(conv, m == ConvMath::fma ? CUDNN_FMA_MATH
                                                  : m == ConvMath::default_math
                                                      ? CUDNN_DEFAULT_MATH
                                                      : CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION));
    if (described != n && g.volume()) {
      set_packed(x, {i(n), i(g.channels), i(g.depth), i(g.height), i(g.width)});
      set_packed(y, {i(n), i(g.out), i(g.out_depth), i(g.out_height), i(g.out_width)});
      described = n;
    }
    if (described != n) {
      CHECK_CUDNN(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, i(n), i(g.channels), i(g.height),
                                             i(g.width)));
      CHECK_CUDNN(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, i(n), i(g.out), i(g.out_height),
                                             i(g.out_width)));
      described = n;
    }
    auto it = plans.find(n);
    if (it != plans.end()) return it->second;
    cudnnHandle_t h = context().dnn();
    Plan p;
    constexpr int kMax = 16;
    int count = 0;
    std::vector<cudnnConvolutionFwdAlgoPerf_t> fwd(kMax);
    CHECK_CUDNN(cudnnFindConvolutionForwardAlgorithm(h, x, w, conv, y, kMax, &count, fwd.data()));
    const auto& f = pick(fwd, count, "forward");
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> data(kMax);
    CHECK_CUDNN(cudnnFindConvolutionBackwardDataAlgorithm(h, w, y, conv, x, kMax, &count, data.data()));
    const auto& d = pick(data, count, "backward-data");
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> filt(kMax);
    CHECK_CUDNN(cudnnFindConvolutionBackwardFilterAlgorithm(h, x, y, conv, w, kMax, &count, filt.data()));
    const auto& fl = pick(filt, count, "backward-filter");
    p.fwd = f.algo;
    p.data = d.algo;
    p.filter = fl.algo;
    p.ws = std::make_unique<Workspace>(std::max({f.memory, d.memory, fl.memory}));
    return plans.emplace(n, std::move(p)).first->second;
  }
};

CudnnConv::CudnnConv(const cpu::ConvGeometry& g) : impl_(std::make_unique<Impl>(g)) {}
CudnnConv::~CudnnConv() = default;

void CudnnConv::forward(const float* x, const float* w, const float* b, float* y, std::int64_t n) {
  if (n == 0) return;
  Impl& m = *impl_;
  Impl::Plan& p = m.plan(n);
  const float one = 1.f, zero = 0.f;
  cudnnHandle_t h = context().dnn();
  CHECK_CUDNN(cudnnConvolutionForward(h, &one, m.x, x, m.w, w, m.conv, p.fwd, p.ws->ptr, p.ws->bytes, &zero, m.y, y));
  CHECK_CUDNN(cudnnAddTensor(h, &one, m.bias, b, &one, m.y, y));
}

void CudnnConv::backward(const float* x, const float* dy, const float* w, float* dw, float* db, float* dx,
                         std::int64_t n, bool accumulate) {
  if (n == 0) return;
  Impl& m = *impl_;
  Impl::Plan& p = m.plan(n);
  const float one = 1.f, zero = 0.f, keep = accumulate ? 1.f : 0.f;
  cudnnHandle_t h = context().dnn();
  CHECK_CUDNN(cudnnConvolutionBackwardBias(h, &one, m.y, dy, &keep, m.bias, db));
  CHECK_CUDNN(cudnnConvolutionBackwardFilter(h, &one, m.x, x, m.y, dy, m.conv, p.filter, p.ws->ptr, p.ws->bytes, &keep,
                                             m.w, dw));
  if (dx)
    CHECK_CUDNN(
        cudnnConvolutionBackwardData(h, &one, m.w, w, m.y, dy, m.conv, p.data, p.ws->ptr, p.ws->bytes, &zero, m.x, dx));
}

std::string CudnnConv::describe(std::int64_t n) {
  const Impl::Plan& p = impl_->plan(n);
  char buf[128];
  std::snprintf(buf, sizeof(buf), "fwd %d / data %d / filter %d, workspace %.1f MiB", static_cast<int>(p.fwd),
                static_cast<int>(p.data), static_cast<int>(p.filter), static_cast<double>(p.ws->bytes) / (1 << 20));
  return buf;
}

}  // namespace hpctrain::cuda
