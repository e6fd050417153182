// What the rest of the program may ask of the CUDA runtime without including
// CUDA headers: the visible GPUs, device selection, library versions, and the
// memory operations the MPI communicator needs to stage device buffers.
// Implemented in device_api.cu when hpctrain is built with CUDA, else by
// device_api_stub.cpp (no GPUs; memory operations throw).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hpctrain/core/dtype.hpp"

namespace hpctrain::cuda {

bool compiled();  // built with the CUDA backend

struct GpuInfo {
  int index = 0;
  std::string name;
  std::size_t memory_bytes = 0;
  int cc_major = 0, cc_minor = 0;
  std::string uuid;        // "GPU-8c1f...": the same GPU has the same UUID in every process, whatever it sees
  std::string pci_bus_id;  // "00000000:3B:00.0": how NVML finds the same GPU (its indices may differ from CUDA's)
};

// GPUs visible to this process. Empty (with `why_none` set) when built without
// CUDA, when there is no NVIDIA driver or no device: never throws for that.
std::vector<GpuInfo> visible_gpus(std::string* why_none);
void set_device(int index);

// "13.0", "9.19.0", "2.28.9" (empty when not built with CUDA).
std::string runtime_version();
std::string cudnn_version();
std::string nccl_version();

// Memory operations used to stage device buffers through pinned host memory.
// An interface so the staging logic is testable on machines without a GPU.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual void* alloc_pinned(std::size_t bytes) = 0;
  virtual void free_pinned(void* p) = 0;
  virtual void copy_to_host(void* host, const void* device, std::size_t bytes) = 0;
  virtual void copy_to_device(void* device, const void* host, std::size_t bytes) = 0;
  // buf[i] *= factor for a float dtype (averaging after a sum).
  virtual void scale(void* device_buf, std::size_t count, DType dtype, double factor) = 0;
  // A marker of the work queued on the compute stream so far. CUDA-aware MPI reads device
  // buffers outside that stream, so the kernels writing them must be done first: the caller
  // records a marker, the progress thread waits for it (which also releases it).
  virtual void* record_marker() = 0;
  virtual void wait_marker(void* marker) = 0;
  // Makes this process's GPU current in the calling thread. A new thread starts on GPU 0: a CUDA
  // call there would make a context on GPU 0 for every rank of the node (and fail in
  // exclusive-process mode).
  virtual void bind_thread() = 0;
};

// The CUDA implementation for the GPU current now (throws when not built with CUDA).
std::unique_ptr<DeviceMemory> make_device_memory();

// Device memory for tensors (Allocator with Device::cuda): a caching pool over cudaMalloc, so a
// training step, once warm, allocates nothing from the driver. Blocks are rounded up to a size
// class and kept on a free list when released; work on the compute stream is ordered, so a block
// released by the host may be handed out again while earlier kernels still use it. Throws
// (out of memory names the bytes asked for, held and cached) when not built with CUDA.
void* device_allocate(std::size_t bytes);
void device_release(void* p, std::size_t bytes);
struct PoolStats {
  std::size_t held = 0;    // bytes cudaMalloc'ed by the pool
  std::size_t cached = 0;  // of which free, waiting for reuse
  std::size_t driver_allocations = 0;
};
PoolStats pool_stats();
// Bytes this process can still take on its GPU: the driver's free memory (cudaMemGetInfo) plus
// what the pool caches (the start-up memory check, train/memory_estimate.hpp).
std::size_t free_device_memory();

// Copies on the compute stream (host <-> device, device <-> device) and zero-filling. Host-side
// copies to the host wait for the stream, so the data are there when they return.
void memcpy_to_device(void* device, const void* host, std::size_t bytes);
// The same without waiting for the device: `host` is copied into one of a ring of pinned buffers
// (waiting only if that buffer's previous copy is still pending), which is then copied to the
// device on the compute stream. `host` may be reused at once. (A copy from pageable memory first
// waits for all earlier work on the stream, so the host could never run ahead of the device.)
void stage_to_device(void* device, const void* host, std::size_t bytes);
void memcpy_to_host(void* host, const void* device, std::size_t bytes);
void memcpy_on_device(void* dst, const void* src, std::size_t bytes);
// Checkpoint downloads: device -> host on a copy stream of their own, after everything queued on
// the compute stream so far (an event orders them); returns when the data are on the host. From
// pinned memory (pin_host: cudaHostRegister in place; false with the driver's reason where it
// refuses, the memory then stays pageable and usable) the copy runs at the link's speed. Pinned
// memory must be unpinned (unpin_host) before it is freed; is_pinned tells (tests).
void download_after_compute(void* host, const void* device, std::size_t bytes);
bool pin_host(void* host, std::size_t bytes, std::string* why);
void unpin_host(void* host);
bool is_pinned(const void* host);
void memset_zero(void* device, std::size_t bytes);
// Waits until everything queued on the compute stream is done.
void synchronize();
// The compute stream (a cudaStream_t), for the NCCL communicator's events; null without CUDA.
void* compute_stream();
// What cuBLAS may multiply float32 GEMM operands in (sums stay float32): fp32 exactly; tf32
// ([precision] tf32: 10-bit mantissa products on tensor cores); bf16 or fp16 ([precision] dtype: the
// operands are already rounded to that format, so the tensor cores compute the same products).
enum class GemmMath { fp32, tf32, bf16, fp16 };
void set_gemm_math(GemmMath m);
// The cuDNN convolution math for a GemmMath (pure; cudnn_conv.cpp maps it to cudnnMathType_t):
// FMA for fp32 (exact float32, as on the CPU); cuDNN's default math, which allows TF32 tensor
// cores but never a down-conversion, for tf32 and bf16 (TF32's 10-bit mantissa multiplies
// bf16-rounded operands exactly); conversion to fp16 only for fp16, whose operands are already
// fp16 values. Allowing conversion in bf16 mode would turn values above 65504 into inf and flush
// small gradients.
enum class ConvMath { fma, default_math, allow_fp16_conversion };
ConvMath conv_math(GemmMath m);
const char* to_string(ConvMath m);
// Counts regrowths of the context's scratch area: a recorded graph holds the old area's address,
// so the trainer records again when this changes (0 without CUDA).
std::uint64_t scratch_generation();
// Operations that must not run while the compute stream is being recorded (freeing memory,
// synchronizing) call this: it throws a clear error naming `what` when `capturing`.
void refuse_during_capture(bool capturing, const char* what);

// Work on the compute stream recorded once and replayed with one launch (a CUDA graph). Between
// begin() and end() the operations are recorded, not run (thread-local capture: other threads'
// CUDA calls are unaffected); launch() runs the recording. Only work without host round trips
// can be recorded: no copies to or from pageable host memory, no allocation from the driver, no
// synchronization. The recording keeps the addresses and kernel arguments it saw.
class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  void begin();
  void end();
  void launch();
  bool ready() const;  // recorded and instantiated

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hpctrain::cuda
