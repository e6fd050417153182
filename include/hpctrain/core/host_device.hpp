// HPCT_HOST_DEVICE: marks small inline functions that both the CPU code and CUDA kernels call, so
// the two backends share one definition (and the CPU tests check the one the GPU runs).
#pragma once

#if defined(__CUDACC__)
#define HPCT_HOST_DEVICE __host__ __device__
#else
#define HPCT_HOST_DEVICE
#endif
