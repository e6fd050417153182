// The CUDA members of the CHECK family (CUDA runtime, cuDNN, NCCL; CHECK_CUBLAS is in
// backend/cuda/cublas_api.hpp, beside the table cuBLAS is called through).
// Include only from CUDA-enabled sources: it includes the libraries' headers.
#pragma once

#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <string>

#include "hpctrain/core/error.hpp"

#define CHECK_CUDA(call)                                                                                             \
  do {                                                                                                               \
    const cudaError_t hpct_e_ = (call);                                                                              \
    if (hpct_e_ != cudaSuccess)                                                                                      \
      ::hpctrain::detail::raise_library("CUDA",                                                                      \
                                        std::string(cudaGetErrorName(hpct_e_)) + ": " + cudaGetErrorString(hpct_e_), \
                                        #call, __FILE__, __LINE__);                                                  \
  } while (0)

#define CHECK_CUDNN(call)                                                                                  \
  do {                                                                                                     \
    const cudnnStatus_t hpct_s_ = (call);                                                                  \
    if (hpct_s_ != CUDNN_STATUS_SUCCESS)                                                                   \
      ::hpctrain::detail::raise_library("cuDNN", cudnnGetErrorString(hpct_s_), #call, __FILE__, __LINE__); \
  } while (0)

#define CHECK_NCCL(call)                                                                                        \
  do {                                                                                                          \
    const ncclResult_t hpct_r_ = (call);                                                                        \
    if (hpct_r_ != ncclSuccess)                                                                                 \
      ::hpctrain::detail::raise_library(                                                                        \
          "NCCL",                                                                                               \
          std::string(ncclGetErrorString(hpct_r_)) + (ncclGetLastError(nullptr) && *ncclGetLastError(nullptr)   \
                                                          ? std::string(" (") + ncclGetLastError(nullptr) + ")" \
                                                          : std::string()),                                     \
          #call, __FILE__, __LINE__);                                                                           \
  } while (0)
