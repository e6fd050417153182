// Batch norm on a GPU through cuDNN (spatial mode: statistics per channel over
// batch, height and width; [F] inputs are [F, 1, 1]), for batch norm that needs
// no statistics from other ranks: the statistics stay on the device, so a step
// has no host round trip and can be recorded as a CUDA graph. Running mean and
// variance are updated by cuDNN as PyTorch does (unbiased variance, momentum as
// the exponential average factor). Device pointers throughout.
//
// Built with the CUDA backend; otherwise constructing one throws.
#pragma once

#include <cstdint>
#include <memory>

namespace hpctrain::cuda {

class CudnnBatchNorm {
 public:
  CudnnBatchNorm(std::int64_t channels, std::int64_t plane, double eps);
  ~CudnnBatchNorm();
  CudnnBatchNorm(const CudnnBatchNorm&) = delete;
  CudnnBatchNorm& operator=(const CudnnBatchNorm&) = delete;
  // y = normalize(x) * gamma + beta with the batch's statistics; running statistics move by
  // `factor` (0: unchanged); save_mean / save_inv_std receive what backward needs.
  void forward_training(const float* x, float* y, std::int64_t n, const float* gamma, const float* beta, double factor,
                        float* running_mean, float* running_var, float* save_mean, float* save_inv_std);
  // The same with the running statistics.
  void forward_inference(const float* x, float* y, std::int64_t n, const float* gamma, const float* beta,
                         const float* running_mean, const float* running_var);
  // dx (required), and dgamma / dbeta overwritten or, with `accumulate`, added to.
  void backward(const float* x, const float* dy, float* dx, std::int64_t n, const float* gamma, float* dgamma,
                float* dbeta, bool accumulate, const float* save_mean, const float* save_inv_std);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hpctrain::cuda
