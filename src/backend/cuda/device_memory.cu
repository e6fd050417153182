// The CUDA context (backend/cuda/context.hpp) and the device memory functions
// of device_api.hpp: the caching pool behind Allocator(Device::cuda), copies
// and zero-filling on the compute stream, and graphs recorded on that stream.
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "hpctrain/backend/cuda/context.hpp"
#include "hpctrain/backend/cuda/device_api.hpp"

namespace hpctrain::cuda {

Context::Context() {
  int dev = 0;
  CHECK_CUDA(cudaGetDevice(&dev));
  CHECK_CUDA(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, dev));
  CHECK_CUDA(cudaStreamCreate(&stream_));  // blocking: ordered with the legacy default stream
  CHECK_CUBLAS(cublas().create(&blas_));
  CHECK_CUBLAS(cublas().set_stream(blas_, stream_));
  CHECK_CUBLAS(cublas().set_math_mode(blas_, CUBLAS_DEFAULT_MATH));
  // A fixed cuBLAS workspace: cuBLAS then allocates nothing while a graph records its calls.
  CHECK_CUDA(cudaMalloc(&blas_workspace_, kBlasWorkspace));
  CHECK_CUBLAS(cublas().set_workspace(blas_, blas_workspace_, kBlasWorkspace));
}

Context::~Context() {
  // Process exit: errors here have nobody to report to.
  if (dnn_) cudnnDestroy(dnn_);
  if (blas_) cublas().destroy(blas_);
  if (scratch_) cudaFree(scratch_);
  if (copy_ready_) cudaEventDestroy(copy_ready_);
  if (copy_stream_) cudaStreamDestroy(copy_stream_);
  if (stream_) cudaStreamDestroy(stream_);
}

cudaStream_t Context::copy_stream() {
  if (!copy_stream_) {
    CHECK_CUDA(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
    CHECK_CUDA(cudaEventCreateWithFlags(&copy_ready_, cudaEventDisableTiming));
  }
  return copy_stream_;
}

cudnnHandle_t Context::dnn() {
  if (!dnn_) {
    CHECK_CUDNN(cudnnCreate(&dnn_));
    CHECK_CUDNN(cudnnSetStream(dnn_, stream_));
  }
  return dnn_;
}

bool Context::capturing() const {
  cudaStreamCaptureStatus s = cudaStreamCaptureStatusNone;
  CHECK_CUDA(cudaStreamIsCapturing(stream_, &s));
  return s != cudaStreamCaptureStatusNone;
}

void* Context::scratch(std::size_t bytes) {
  if (bytes > scratch_bytes_) {
    refuse_during_capture(capturing(), "growing the CUDA scratch area");
    ++scratch_generation_;
    if (scratch_) {
      CHECK_CUDA(cudaStreamSynchronize(stream_));  // earlier users of the old area are done
      CHECK_CUDA(cudaFree(scratch_));
    }
    scratch_bytes_ = std::max<std::size_t>(bytes, 1 << 20);
    CHECK_CUDA(cudaMalloc(&scratch_, scratch_bytes_));
  }
  return scratch_;
}

Context& context() {
  // Made on first use (the runtime selects the device before the first operation) and never
  // destroyed: destroying cuBLAS and cuDNN handles from a static destructor, after the CUDA
  // runtime may have begun to unload, can crash at exit; the driver frees everything then.
  static Context* ctx = new Context();
  return *ctx;
}

namespace {

// Blocks rounded to 512 bytes below 1 MiB and to whole MiB above; a released block goes on the
// free list of its rounded size and serves the next request of that size (training repeats the
// same shapes every step). When cudaMalloc fails, the cached blocks are freed and it is retried.
class Pool {
 public:
  static std::size_t rounded(std::size_t bytes) {
    const std::size_t unit = bytes < (std::size_t{1} << 20) ? 512 : (std::size_t{1} << 20);
    return (std::max<std::size_t>(bytes, 1) + unit - 1) / unit * unit;
  }
  void* allocate(std::size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::size_t size = rounded(bytes);
    auto& list = free_[size];
    if (!list.empty()) {
      void* p = list.back();
      list.pop_back();
      stats_.cached -= size;
      return p;
    }
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, size);
    if (e == cudaErrorMemoryAllocation && stats_.cached > 0) {
      cudaGetLastError();
      release_cached();
      e = cudaMalloc(&p, size);
    }
    if (e != cudaSuccess) {
      cudaGetLastError();
      auto mib = [](std::size_t b) { return std::to_string((b + (1 << 20) - 1) >> 20) + " MiB"; };
      throw Error(ExitCode::internal, Scope::this_rank,
                  "GPU out of memory: cudaMalloc of " + mib(size) + " failed (" + cudaGetErrorString(e) + ") with " +
                      mib(stats_.held) +
                      " held by hpctrain's pool; use fewer micro-batch rows or more ranks "
                      "([parallel] pipeline_parallel)");
    }
    stats_.held += size;
    ++stats_.driver_allocations;
    return p;
  }
  void release(void* p, std::size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::size_t size = rounded(bytes);
    free_[size].push_back(p);
    stats_.cached += size;
  }
  PoolStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  void release_cached() {
    refuse_during_capture(context().capturing(), "freeing cached device memory to retry an allocation");
    CHECK_CUDA(cudaDeviceSynchronize());
    for (auto& [size, list] : free_) {
      for (void* p : list) cudaFree(p);
      stats_.held -= size * list.size();
      stats_.cached -= size * list.size();
      list.clear();
    }
  }
  std::mutex mu_;
  std::map<std::size_t, std::vector<void*>> free_;
  PoolStats stats_;
};

Pool& pool() {
  static Pool* p = new Pool();  // never destroyed, like the context: the driver frees device memory at exit
  return *p;
}

}  // namespace

void* device_allocate(std::size_t bytes) { return pool().allocate(bytes); }
void device_release(void* p, std::size_t bytes) { pool().release(p, bytes); }
PoolStats pool_stats() { return pool().stats(); }
std::size_t free_device_memory() {
  std::size_t free = 0, total = 0;
  CHECK_CUDA(cudaMemGetInfo(&free, &total));
  return free + pool_stats().cached;
}

void memcpy_to_device(void* device, const void* host, std::size_t bytes) {
  if (!bytes) return;
  // From pageable host memory the copy is staged by the driver and returns once the source is read.
  CHECK_CUDA(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, context().stream()));
}

namespace {
// Pinned buffers used in turn by stage_to_device, each with the event of its last copy.
class StagingRing {
 public:
  void copy(void* device, const void* host, std::size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& s = slots_[next_];
    next_ = (next_ + 1) % kSlots;
    if (s.pending) CHECK_CUDA(cudaEventSynchronize(s.done));  // its previous copy has left the buffer
    if (s.bytes < bytes) {
      if (s.ptr) CHECK_CUDA(cudaFreeHost(s.ptr));
      s.bytes = std::max<std::size_t>(bytes, 1 << 20);
      CHECK_CUDA(cudaMallocHost(&s.ptr, s.bytes));
    }
    if (!s.done) CHECK_CUDA(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming));
    std::memcpy(s.ptr, host, bytes);
    CHECK_CUDA(cudaMemcpyAsync(device, s.ptr, bytes, cudaMemcpyHostToDevice, context().stream()));
    CHECK_CUDA(cudaEventRecord(s.done, context().stream()));
    s.pending = true;
  }

 private:
  static constexpr int kSlots = 8;  // a step stages up to 4 arrays: two steps in flight
  struct Slot {
    void* ptr = nullptr;
    std::size_t bytes = 0;
    cudaEvent_t done = nullptr;
    bool pending = false;
  };
  std::mutex mu_;
  Slot slots_[kSlots];
  int next_ = 0;
};
}  // namespace

void stage_to_device(void* device, const void* host, std::size_t bytes) {
  if (!bytes) return;
  static StagingRing* ring = new StagingRing();  // never destroyed, like the context
  ring->copy(device, host, bytes);
}

void memcpy_to_host(void* host, const void* device, std::size_t bytes) {
  if (!bytes) return;
  CHECK_CUDA(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, context().stream()));
  CHECK_CUDA(cudaStreamSynchronize(context().stream()));
}

void download_after_compute(void* host, const void* device, std::size_t bytes) {
  if (!bytes) return;
  Context& c = context();
  cudaStream_t copy = c.copy_stream();
  CHECK_CUDA(cudaEventRecord(c.copy_ready(), c.stream()));
  CHECK_CUDA(cudaStreamWaitEvent(copy, c.copy_ready(), 0));
  CHECK_CUDA(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, copy));
  CHECK_CUDA(cudaStreamSynchronize(copy));
}

bool pin_host(void* host, std::size_t bytes, std::string* why) {
  const cudaError_t e = cudaHostRegister(host, bytes, cudaHostRegisterDefault);
  if (e == cudaSuccess) return true;
  cudaGetLastError();  // cleared: the buffer stays usable, only slower
  if (why) *why = cudaGetErrorString(e);
  return false;
}

void unpin_host(void* host) { cudaHostUnregister(host); }

bool is_pinned(const void* host) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, host) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeHost;
}

void memcpy_on_device(void* dst, const void* src, std::size_t bytes) {
  if (bytes && dst != src) CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, context().stream()));
}

void memset_zero(void* device, std::size_t bytes) {
  if (bytes) CHECK_CUDA(cudaMemsetAsync(device, 0, bytes, context().stream()));
}

void synchronize() { CHECK_CUDA(cudaStreamSynchronize(context().stream())); }

struct Graph::Impl {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~Impl() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};
Graph::Graph() : impl_(std::make_unique<Impl>()) {}
Graph::~Graph() = default;

void Graph::begin() {
  HPCT_CHECK(!impl_->graph, "CUDA graph recorded twice");
  CHECK_CUDA(cudaStreamBeginCapture(context().stream(), cudaStreamCaptureModeThreadLocal));
}

void Graph::end() {
  CHECK_CUDA(cudaStreamEndCapture(context().stream(), &impl_->graph));
  CHECK_CUDA(cudaGraphInstantiate(&impl_->exec, impl_->graph, 0));
}

void Graph::launch() { CHECK_CUDA(cudaGraphLaunch(impl_->exec, context().stream())); }
bool Graph::ready() const { return impl_->exec != nullptr; }
void* compute_stream() { return context().stream(); }
void set_gemm_math(GemmMath m) {
  context().set_gemm_math(m, m == GemmMath::tf32   ? CUBLAS_COMPUTE_32F_FAST_TF32
                             : m == GemmMath::bf16 ? CUBLAS_COMPUTE_32F_FAST_16BF
                             : m == GemmMath::fp16 ? CUBLAS_COMPUTE_32F_FAST_16F
                                                   : CUBLAS_COMPUTE_32F);
}
std::uint64_t scratch_generation() { return context().scratch_generation(); }

}  // namespace hpctrain::cuda
