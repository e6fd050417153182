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

namespace {
[[noreturn]] void no_cuda() {
  throw bad_input("device memory needs the CUDA backend, but hpctrain was built without CUDA");
}
}  // namespace

void* device_allocate(std::size_t) { no_cuda(); }
void device_release(void*, std::size_t) {}
PoolStats pool_stats() { return {}; }
std::size_t free_device_memory() { no_cuda(); }
void memcpy_to_device(void*, const void*, std::size_t) { no_cuda(); }
void memcpy_to_host(void*, const void*, std::size_t) { no_cuda(); }
void stage_to_device(void*, const void*, std::size_t) { no_cuda(); }
void memcpy_on_device(void*, const void*, std::size_t) { no_cuda(); }
void download_after_compute(void*, const void*, std::size_t) { no_cuda(); }
bool pin_host(void*, std::size_t, std::string* why) {
  if (why) *why = "hpctrain was built without CUDA";
  return false;
}
void unpin_host(void*) {}
bool is_pinned(const void*) { return false; }
void memset_zero(void*, std::size_t) { no_cuda(); }
void synchronize() {}
void* compute_stream() { return nullptr; }
void set_gemm_math(GemmMath) {}
std::uint64_t scratch_generation() { return 0; }

struct Graph::Impl {};
Graph::Graph() = default;
Graph::~Graph() = default;
void Graph::begin() { no_cuda(); }
void Graph::end() { no_cuda(); }
void Graph::launch() { no_cuda(); }
bool Graph::ready() const { return false; }

}  // namespace hpctrain::cuda
