// device_api.hpp for builds without CUDA: no GPUs, and memory operations that
// explain why they are unavailable.
#include "hpctrain/backend/cuda/device_api.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain::cuda {

bool compiled() { return false; }

std::vector<GpuInfo> visible_gpus(std::string* why_none) {
  if (why_none) *why_none = "hpctrain was built without CUDA";
  return {};
}

void set_device(int) { throw bad_input("[run] device = cuda: hpctrain was built without CUDA"); }

std::string runtime_version() { return ""; }
std::string cudnn_version() { return ""; }
std::string nccl_version() { return ""; }

std::unique_ptr<DeviceMemory> make_device_memory() {
  throw bad_input("device buffers need the CUDA backend, but hpctrain was built without CUDA");
}

}  // namespace hpctrain::cuda
