// cuBLAS, reached through a table of its functions that is loaded (dlopen) when the first
// GPU context is made, not linked into the programs: linking libcublas loads libcublasLt
// (540 MB), whose static initializers cost about 0.3 s of CPU at the start of every process,
// CPU-only runs and `trainer --help` included (docs/testing.md). For CUDA sources only.
//
// Adding a cuBLAS call: one member here, one line in cublas_api.cpp's table; calling a cuBLAS
// function directly fails to link.
#pragma once

#include <cublas_v2.h>

#include <string>

#include "hpctrain/core/error.hpp"

namespace hpctrain::cuda {

struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSetWorkspace_v2) set_workspace = nullptr;
  decltype(&cublasGetStatusName) status_name = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  // The C functions (cublas_api.h adds C++ overloads of these names taking cudaDataType).
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  cublasStatus_t (*gemm_strided_batched_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                            const void*, const void*, cudaDataType, int, long long, const void*,
                                            cudaDataType, int, long long, const void*, void*, cudaDataType, int,
                                            long long, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
};

// The table, loaded on the first call (thread-safe) from libcublas.so.<major of the headers>:
// first by the dynamic loader's search (RUNPATH, LD_LIBRARY_PATH, ld.so.cache), then next to the
// CUDA runtime this process has loaded. Throws an Error naming every place tried, or the
// function the library lacks.
const CublasApi& cublas();

// "NAME: description" of a cuBLAS status, for CHECK_CUBLAS.
std::string cublas_status_text(cublasStatus_t s);

}  // namespace hpctrain::cuda

#define CHECK_CUBLAS(call)                                                                                        \
  do {                                                                                                            \
    const cublasStatus_t hpct_s_ = (call);                                                                        \
    if (hpct_s_ != CUBLAS_STATUS_SUCCESS)                                                                         \
      ::hpctrain::detail::raise_library("cuBLAS", ::hpctrain::cuda::cublas_status_text(hpct_s_), #call, __FILE__, \
                                        __LINE__);                                                                \
  } while (0)
