// cuDNN batch norm (backend/cuda/cudnn_batchnorm.hpp). Host code only; like the
// convolution, cuDNN 9 marks this descriptor API deprecated, and the warnings
// are silenced here.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#include "hpctrain/backend/cuda/cudnn_batchnorm.hpp"

#include "hpctrain/backend/checks.hpp"
#include "hpctrain/backend/cuda/context.hpp"

namespace hpctrain::cuda {

struct CudnnBatchNorm::Impl {
  std::int64_t channels, plane;
  double eps;
  cudnnTensorDescriptor_t x = nullptr, stats = nullptr;
  std::int64_t described = -1;  // batch size the descriptors hold

  Impl(std::int64_t c, std::int64_t p, double e) : channels(c), plane(p), eps(e) {
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&x));
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&stats));
  }
  ~Impl() {
    cudnnDestroyTensorDescriptor(stats);
    cudnnDestroyTensorDescriptor(x);
  }
  void describe(std::int64_t n) {
    if (described == n) return;
    CHECK_CUDNN(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                           backend::checked_int(n, "cuDNN batch norm: batch"),
                                           backend::checked_int(channels, "cuDNN batch norm: channels"),
                                           backend::checked_int(plane, "cuDNN batch norm: plane size"), 1));
    CHECK_CUDNN(cudnnDeriveBNTensorDescriptor(stats, x, CUDNN_BATCHNORM_SPATIAL));
    described = n;
  }
};

CudnnBatchNorm::CudnnBatchNorm(std::int64_t channels, std::int64_t plane, double eps)
    : impl_(std::make_unique<Impl>(channels, plane, eps)) {}
CudnnBatchNorm::~CudnnBatchNorm() = default;

void CudnnBatchNorm::forward_training(const float* x, float* y, std::int64_t n, const float* gamma, const float* beta,
                                      double factor, float* running_mean, float* running_var, float* save_mean,
                                      float* save_inv_std) {
  Impl& m = *impl_;
  m.describe(n);
  const float one = 1.f, zero = 0.f;
  CHECK_CUDNN(cudnnBatchNormalizationForwardTraining(context().dnn(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, m.x, x, m.x,
                                                     y, m.stats, gamma, beta, factor, running_mean, running_var, m.eps,
                                                     save_mean, save_inv_std));
}

void CudnnBatchNorm::forward_inference(const float* x, float* y, std::int64_t n, const float* gamma, const float* beta,
                                       const float* running_mean, const float* running_var) {
  Impl& m = *impl_;
  m.describe(n);
  const float one = 1.f, zero = 0.f;
  CHECK_CUDNN(cudnnBatchNormalizationForwardInference(context().dnn(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, m.x, x,
                                                      m.x, y, m.stats, gamma, beta, running_mean, running_var, m.eps));
}

void CudnnBatchNorm::backward(const float* x, const float* dy, float* dx, std::int64_t n, const float* gamma,
                              float* dgamma, float* dbeta, bool accumulate, const float* save_mean,
                              const float* save_inv_std) {
  Impl& m = *impl_;
  m.describe(n);
  const float one = 1.f, zero = 0.f, keep = accumulate ? 1.f : 0.f;
  CHECK_CUDNN(cudnnBatchNormalizationBackward(context().dnn(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &keep, m.x,
                                              x, m.x, dy, m.x, dx, m.stats, gamma, dgamma, dbeta, m.eps, save_mean,
                                              save_inv_std));
}

}  // namespace hpctrain::cuda
