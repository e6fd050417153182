// The runtime every rank builds after MPI is up: who it is (host, local rank),
// which device it computes on, the process mesh, the collective watchdog, and
// the communicators of its groups along the mesh's dimensions.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hpctrain/backend/cuda/device_api.hpp"
#include "hpctrain/comm/agreement.hpp"
#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/comm/mpi_handles.hpp"
#include "hpctrain/comm/watchdog.hpp"
#include "hpctrain/config/config.hpp"
#include "hpctrain/runtime/mesh.hpp"

namespace hpctrain {

struct RankInfo {
  int world_rank = 0, world_size = 1;
  int local_rank = 0, local_size = 1;  // among ranks sharing this node
  std::string host;
};

// Collective over `world`: the ranks sharing this node's memory (MPI_Comm_split_type(SHARED)).
MpiComm split_node(MPI_Comm world);
// This rank's place in `world` and on its node (`node`: split_node(world)).
RankInfo query_rank_info(MPI_Comm world, const MpiComm& node);

struct DeviceAssignment {
  DeviceKind kind = DeviceKind::cpu;  // never auto_
  int gpu = -1;                       // CUDA device index when kind == cuda
  std::string description;            // "cpu" or "cuda:0 NVIDIA H200 (139.8 GiB)"
  bool shared = false;                // [run] share_gpus: other ranks of this node use the same GPU
  bool first_on_gpu = false;          // the lowest local rank on its GPU: it counts the GPU's energy and hours
  std::string pci_bus_id;             // the GPU's, for its telemetry (NVML)
};

// Pure: resolves [run] device for one rank. auto = cuda when a GPU is visible. Local rank r takes
// visible GPU r % (GPUs it sees). Two ranks of a node on one GPU is an error unless `share_gpus`
// allows it. Which GPUs are shared is decided from `node_picks`, the UUID each local rank of the
// node takes (pick_uuid; Runtime gathers them): under Slurm's --gpus-per-task=1 every rank sees
// one GPU, a different one, and nothing is shared. Without node_picks (tests, one process) the
// count decides: more local ranks than visible GPUs.
DeviceAssignment choose_device(DeviceKind requested, const RankInfo& me, const std::vector<cuda::GpuInfo>& gpus,
                               const std::string& why_no_gpu, bool share_gpus = false,
                               const std::vector<std::string>& node_picks = {});
// The UUID of the GPU local rank `me.local_rank` takes among `gpus` ("" without GPUs).
std::string pick_uuid(const RankInfo& me, const std::vector<cuda::GpuInfo>& gpus);

// Pure: a GPU's dense peak FLOP/s for a run's GEMMs, for model FLOPs utilization (MFU), from
// its name in `device.description` (vendor figures, dense, no sparsity): H100 / H200 SXM 989e12
// in bf16/fp16, 494.5e12 with TF32, 66.9e12 in float32; A100 312e12, 156e12, 19.5e12. nullopt
// on the CPU and for other GPUs (no MFU is printed then).
std::optional<double> peak_flops(const DeviceAssignment& device, Precision dtype, bool tf32);

// Pure: resolves [parallel] comm for a device. auto = nccl on cuda, mpi on cpu or when ranks share
// a GPU (NCCL cannot put two ranks of one communicator on one GPU; asking for it is bad_input).
CommBackend choose_comm(CommBackend requested, DeviceKind device, bool shared_gpu = false);

// Whether the MPI library reports CUDA-aware support at run time (only after MPI_Init).
bool mpi_reports_cuda_aware();
// Whether the MPI headers compiled against declare CUDA-aware support (Open MPI's
// MPIX_CUDA_AWARE_SUPPORT); answerable without MPI, for --version.
bool mpi_headers_cuda_aware();

// comm/agreement.hpp's raise_if_any and compute_on_root over an MPI communicator, for what runs
// before the Runtime and its watched communicators exist (reading the configuration).
void raise_if_any(MPI_Comm comm, const std::string& local_error);
std::vector<std::string> compute_on_root(MPI_Comm comm, const std::function<std::vector<std::string>()>& work);

// Host communicators for tools and tests that run without a Runtime (unwatched), over `comm` and
// over the ranks of this node. Collective.
std::unique_ptr<Communicator> host_communicator(MPI_Comm comm, const std::string& name);
std::unique_ptr<Communicator> node_host_communicator();

class Runtime {
 public:
  // Collective over MPI_COMM_WORLD. Validates the mesh and batch sizes.
  explicit Runtime(const Config& config);
  ~Runtime();

  const RankInfo& rank_info() const { return info_; }
  const Mesh& mesh() const { return *mesh_; }
  const DeviceAssignment& device() const { return device_; }
  CommBackend comm_backend() const { return comm_; }
  bool cuda_aware_mpi() const { return cuda_aware_; }
  long per_rank_batch() const { return per_rank_batch_; }
  Watchdog* watchdog() const { return watchdog_.get(); }
  // Host buffers over MPI_COMM_WORLD, watched by the watchdog: the trainer's world-wide agreements
  // (the per-step stop/checkpoint flags, fp16 overflow, end-of-run reductions) go through it, so a
  // rank that never arrives ends the job with exit 3 instead of a silent hang.
  Communicator& world() const { return *world_; }
  // Collective: a new host communicator over MPI_COMM_WORLD that the watchdog does not watch, for
  // a wait without bound (--generate --interactive's ranks waiting on what a person types).
  std::unique_ptr<Communicator> unwatched_world() const { return host_communicator(MPI_COMM_WORLD, "unwatched"); }
  // Host buffers over the ranks of this node (watched): their agreements and node-shared memory
  // (comm/shared_window.hpp: the data reader's node cache).
  Communicator& node() const { return *node_; }

  // A communicator over `comm` with the configured backend, for buffers in
  // `memory` (host buffers always use MPI). Collective over `comm`.
  // `shm`: float32 sums in host memory through node-shared memory when the group is on one node.
  std::unique_ptr<Communicator> make_communicator(MPI_Comm comm, const std::string& name, MemorySpace memory,
                                                  bool shm = false);
  // The same over this rank's group along mesh dimension `dim`, named as the mesh names it
  // ("dp[pp=1]") plus `suffix` (code above the runtime never holds the MPI handles). Collective
  // over that group.
  std::unique_ptr<Communicator> make_communicator(MeshDim dim, MemorySpace memory, const std::string& suffix = "");
  // The same over the ranks of that group whose coordinate along `dim` is in `members` (named
  // with `suffix`); nullptr on the others. Collective over the whole group.
  std::unique_ptr<Communicator> make_communicator(MeshDim dim, const std::vector<int>& members, MemorySpace memory,
                                                  const std::string& suffix);
  // A new communicator over every rank, "world" + suffix (e.g. a background writer's own).
  std::unique_ptr<Communicator> make_world_communicator(MemorySpace memory, const std::string& suffix);

  // Collective: the per-rank table (rank, host, local rank, device, and each mesh coordinate of
  // dp, pp and any other dimension larger than 1), gathered on rank 0 (empty string elsewhere).
  std::string mesh_table() const;

 private:
  RankInfo info_;
  DeviceAssignment device_;
  CommBackend comm_ = CommBackend::mpi;
  HostAllreduce host_allreduce_ = HostAllreduce::auto_;
  bool cuda_aware_ = false;
  bool verbose_ = false;  // [log] verbose: internal lines (the path of gradient sums)
  long per_rank_batch_ = 0;
  std::unique_ptr<Mesh> mesh_;
  std::unique_ptr<Watchdog> watchdog_;
  std::unique_ptr<cuda::DeviceMemory> device_memory_;
  MpiComm node_handle_;                  // the ranks of this node (split once)
  std::unique_ptr<Communicator> world_;  // after the watchdog: detached from it first
  std::unique_ptr<Communicator> node_;
};

}  // namespace hpctrain
