// device_api.hpp on the CUDA runtime: GPU discovery that tolerates a missing
// driver, device selection, library versions and the staging memory
// operations (pinned host memory, copies, an in-place scale kernel).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdio>

#include "hpctrain/backend/cuda/device_api.hpp"
#include "hpctrain/core/cuda_check.hpp"

namespace hpctrain::cuda {

bool compiled() { return true; }

std::vector<GpuInfo> visible_gpus(std::string* why_none) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky state
    if (why_none) *why_none = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
    return {};
  }
  std::vector<GpuInfo> out;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    CHECK_CUDA(cudaGetDeviceProperties(&p, i));
    static const char* hex = "0123456789abcdef";
    std::string uuid = "GPU-";
    for (int b = 0; b < 16; ++b) {
      const auto v = static_cast<unsigned char>(p.uuid.bytes[b]);
      uuid += hex[v >> 4];
      uuid += hex[v & 15];
    }
    char bus[32];
    std::snprintf(bus, sizeof(bus), "%08X:%02X:%02X.0", static_cast<unsigned>(p.pciDomainID),
                  static_cast<unsigned>(p.pciBusID), static_cast<unsigned>(p.pciDeviceID));
    out.push_back({i, p.name, p.totalGlobalMem, p.major, p.minor, uuid, bus});
  }
  if (out.empty() && why_none) *why_none = "no CUDA device visible";
  return out;
}

void set_device(int index) { CHECK_CUDA(cudaSetDevice(index)); }

std::string runtime_version() {
  int v = 0;
  if (cudaRuntimeGetVersion(&v) != cudaSuccess) return "?";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string cudnn_version() {
  const size_t v = cudnnGetVersion();  // major*10000 + minor*100 + patch (cuDNN 9)
  return std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." + std::to_string(v % 100);
}

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "?";
  return std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." + std::to_string(v % 100);
}

namespace {

template <typename T>
__global__ void scale_kernel(T* buf, std::size_t n, float factor) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    buf[i] = static_cast<T>(static_cast<float>(buf[i]) * factor);
}

__global__ void scale_kernel_f64(double* buf, std::size_t n, double factor) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    buf[i] *= factor;
}

class CudaDeviceMemory final : public DeviceMemory {
 public:
  CudaDeviceMemory() { CHECK_CUDA(cudaGetDevice(&device_)); }
  void* record_marker() override {
    cudaEvent_t e = nullptr;
    CHECK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    CHECK_CUDA(cudaEventRecord(e, static_cast<cudaStream_t>(compute_stream())));
    return e;
  }
  void wait_marker(void* marker) override {
    auto e = static_cast<cudaEvent_t>(marker);
    const cudaError_t rc = cudaEventSynchronize(e);
    cudaEventDestroy(e);
    CHECK_CUDA(rc);
  }
  void bind_thread() override { CHECK_CUDA(cudaSetDevice(device_)); }

  void* alloc_pinned(std::size_t bytes) override {
    void* p = nullptr;
    CHECK_CUDA(cudaMallocHost(&p, bytes ? bytes : 1));
    return p;
  }
  void free_pinned(void* p) override { cudaFreeHost(p); }
  void copy_to_host(void* host, const void* device, std::size_t bytes) override {
    if (bytes) CHECK_CUDA(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost));
  }
  void copy_to_device(void* device, const void* host, std::size_t bytes) override {
    if (bytes) CHECK_CUDA(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice));
  }
  void scale(void* buf, std::size_t n, DType dtype, double factor) override {
    if (n == 0) return;
    const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 4096));
    switch (dtype) {
      case DType::f32: scale_kernel<<<blocks, 256>>>(static_cast<float*>(buf), n, static_cast<float>(factor)); break;
      case DType::f64: scale_kernel_f64<<<blocks, 256>>>(static_cast<double*>(buf), n, factor); break;
      case DType::f16: scale_kernel<<<blocks, 256>>>(static_cast<__half*>(buf), n, static_cast<float>(factor)); break;
      case DType::bf16:
        scale_kernel<<<blocks, 256>>>(static_cast<__nv_bfloat16*>(buf), n, static_cast<float>(factor));
        break;
      default: HPCT_CHECK(false, std::string("scale of non-float dtype ") + dtype_name(dtype));
    }
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
  }

 private:
  int device_ = 0;
};

}  // namespace

std::unique_ptr<DeviceMemory> make_device_memory() { return std::make_unique<CudaDeviceMemory>(); }

}  // namespace hpctrain::cuda
