// Implementation of the per-rank runtime (runtime/runtime.hpp): rank facts,
// device choice, grid and batch validation, watchdog and communicators.
#include "hpctrain/runtime/runtime.hpp"

#include <unistd.h>

#include <algorithm>
#include <sstream>

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI: MPIX_Query_cuda_support
#endif

#include "hpctrain/comm/mpi_communicator.hpp"
#include "hpctrain/comm/nccl_communicator.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/log.hpp"
#include "hpctrain/core/table.hpp"

namespace hpctrain {

MpiComm split_node(MPI_Comm world) {
  int rank = 0;
  CHECK_MPI(MPI_Comm_rank(world, &rank));
  MPI_Comm c = MPI_COMM_NULL;
  CHECK_MPI(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &c));
  return MpiComm(c);
}

RankInfo query_rank_info(MPI_Comm world, const MpiComm& node) {
  RankInfo r;
  CHECK_MPI(MPI_Comm_rank(world, &r.world_rank));
  CHECK_MPI(MPI_Comm_size(world, &r.world_size));
  r.local_rank = node.rank();
  r.local_size = node.size();
  r.host = host_name();
  return r;
}

std::optional<double> peak_flops(const DeviceAssignment& device, Precision dtype, bool tf32) {
  struct Peak {
    const char* name;
    double half, tf32, fp32;
  };
  static constexpr Peak kPeaks[] = {
      {"H100", 989e12, 494.5e12, 66.9e12}, {"H200", 989e12, 494.5e12, 66.9e12}, {"A100", 312e12, 156e12, 19.5e12}};
  if (device.kind != DeviceKind::cuda) return std::nullopt;
  for (const Peak& p : kPeaks)
    if (device.description.find(p.name) != std::string::npos)
      return dtype != Precision::fp32 ? p.half : tf32 ? p.tf32 : p.fp32;
  return std::nullopt;
}

DeviceAssignment choose_device(DeviceKind requested, const RankInfo& me, const std::vector<cuda::GpuInfo>& gpus,
                               const std::string& why_no_gpu, bool share_gpus,
                               const std::vector<std::string>& node_picks) {
  DeviceAssignment d;
  if (requested == DeviceKind::cpu || (requested == DeviceKind::auto_ && gpus.empty())) {
    d.kind = DeviceKind::cpu;
    d.description = "cpu";
    return d;
  }
  if (gpus.empty())
    throw bad_input("[run] device = cuda, but no GPU is visible on " + me.host + ": " + why_no_gpu +
                    " (use device = cpu or auto)");
  const auto& g = gpus[static_cast<std::size_t>(me.local_rank) % gpus.size()];
  const std::string hints = ": start one rank per GPU (mpirun -np " + std::to_string(gpus.size()) +
                            " per node), set device = cpu, or allow sharing with [run] share_gpus = true";
  bool oversubscribed = false;
  std::string why;
  if (node_picks.empty()) {  // no view of the other ranks: by count
    oversubscribed = me.local_size > static_cast<int>(gpus.size());
    d.first_on_gpu = me.local_rank < static_cast<int>(gpus.size());
    why = std::to_string(me.local_size) + " ranks on " + me.host + " but only " + std::to_string(gpus.size()) +
          " GPU(s) visible";
  } else {  // by identity: ranks that each see one different GPU share nothing
    std::string same;
    int count = 0;
    for (std::size_t r = 0; r < node_picks.size(); ++r)
      if (node_picks[r] == g.uuid) {
        if (count == 0) d.first_on_gpu = static_cast<int>(r) == me.local_rank;
        same += (count++ ? ", " : "") + std::to_string(r);
      }
    oversubscribed = count > 1;
    why = "local ranks " + same + " on " + me.host + " would share one GPU (" + g.uuid + ", " + g.name + ")";
  }
  if (oversubscribed && !share_gpus)
    throw bad_input("[run] device = " + std::string(name_of(requested)) + ": " + why + hints);
  d.shared = oversubscribed;
  d.kind = DeviceKind::cuda;
  d.gpu = g.index;
  d.pci_bus_id = g.pci_bus_id;
  std::ostringstream os;
  os.precision(1);
  os << std::fixed << "cuda:" << g.index << " " << g.name << " (" << static_cast<double>(g.memory_bytes) / (1 << 30)
     << " GiB)";
  d.description = os.str() + (oversubscribed ? ", shared" : "");
  return d;
}

std::string pick_uuid(const RankInfo& me, const std::vector<cuda::GpuInfo>& gpus) {
  return gpus.empty() ? "" : gpus[static_cast<std::size_t>(me.local_rank) % gpus.size()].uuid;
}

namespace {
// Collective over `comm`: every rank's string (at most 127 bytes), on every rank.
std::vector<std::string> allgather_short(MPI_Comm comm, const std::string& mine) {
  constexpr int kWidth = 128;
  int size = 0;
  CHECK_MPI(MPI_Comm_size(comm, &size));
  std::vector<char> all(static_cast<std::size_t>(size) * kWidth, '\0');
  std::vector<char> buf(kWidth, '\0');
  std::copy_n(mine.begin(), std::min<std::size_t>(mine.size(), kWidth - 1), buf.begin());
  CHECK_MPI(MPI_Allgather(buf.data(), kWidth, MPI_CHAR, all.data(), kWidth, MPI_CHAR, comm));
  std::vector<std::string> out;
  for (int r = 0; r < size; ++r) out.emplace_back(all.data() + static_cast<std::ptrdiff_t>(r) * kWidth);
  return out;
}

// The UUIDs the ranks of this node take (a GPU seen by several ranks under different indices is
// still one GPU).
std::vector<std::string> gather_node_picks(const MpiComm& node, const std::string& mine) {
  return allgather_short(node.get(), mine);
}
}  // namespace

CommBackend choose_comm(CommBackend requested, DeviceKind device, bool shared_gpu) {
  if (requested == CommBackend::nccl && shared_gpu)
    throw bad_input(
        "[parallel] comm = nccl with [run] share_gpus: NCCL cannot put two ranks of one communicator "
        "on one GPU (use comm = auto or mpi)");
  if (requested != CommBackend::auto_) return requested;
  return device == DeviceKind::cuda && cuda::compiled() && !shared_gpu ? CommBackend::nccl : CommBackend::mpi;
}

bool mpi_reports_cuda_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

bool mpi_headers_cuda_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return true;
#else
  return false;
#endif
}

void raise_if_any(MPI_Comm comm, const std::string& local_error) {
  raise_if_any(*host_communicator(comm, "agreement"), local_error);  // (unwatched: before the Runtime exists)
}

std::vector<std::string> compute_on_root(MPI_Comm comm, const std::function<std::vector<std::string>()>& work) {
  return compute_on_root(*host_communicator(comm, "agreement"), work);
}

Runtime::Runtime(const Config& config) {
  node_handle_ = split_node(MPI_COMM_WORLD);
  info_ = query_rank_info(MPI_COMM_WORLD, node_handle_);

  // Decisions every rank makes alike (grid, batch) throw bad_input directly;
  // those that may differ between nodes (devices) are agreed on first.
  const MeshShape shape = make_mesh_shape(info_.world_size, config.parallel);
  per_rank_batch_ = hpctrain::per_rank_batch(config.train.global_batch, config.train.micro_batches, shape);

  std::string error, why_none;
  std::vector<cuda::GpuInfo> gpus;
  try {
    if (config.run.device != DeviceKind::cpu) gpus = cuda::visible_gpus(&why_none);
  } catch (const Error& e) {
    error = e.what();
  }
  const auto node_picks =
      gather_node_picks(node_handle_, pick_uuid(info_, gpus));  // collective: every rank, even after an error
  try {
    if (!error.empty()) throw Error(ExitCode::internal, Scope::this_rank, error);
    device_ = choose_device(config.run.device, info_, gpus, why_none, config.run.share_gpus, node_picks);
    comm_ = choose_comm(config.parallel.comm, device_.kind, device_.shared);
    host_allreduce_ = config.parallel.host_allreduce;
    verbose_ = config.log.verbose;
    if (comm_ == CommBackend::nccl && host_allreduce_ == HostAllreduce::shm)
      throw bad_input(
          "[parallel] host_allreduce = shm applies to MPI on host memory, but NCCL averages the gradients "
          "here (comm = nccl): use host_allreduce = auto, or comm = mpi");
    if (comm_ == CommBackend::nccl && device_.kind != DeviceKind::cuda)
      throw bad_input("[parallel] comm = nccl needs GPUs, but this rank computes on the cpu");
    if (device_.kind == DeviceKind::cuda) cuda::set_device(device_.gpu);
  } catch (const Error& e) {
    error = "rank " + std::to_string(info_.world_rank) + ": " + e.what();
  }
  raise_if_any(MPI_COMM_WORLD, error);

  const bool reported = mpi_reports_cuda_aware();
  cuda_aware_ =
      config.parallel.cuda_aware_mpi == Tristate::on || (config.parallel.cuda_aware_mpi == Tristate::auto_ && reported);
  if (config.parallel.cuda_aware_mpi == Tristate::on && !reported && info_.world_rank == 0)
    warn("[parallel] cuda_aware_mpi = on, but the MPI library does not report CUDA support");

  mesh_ = std::make_unique<Mesh>(MPI_COMM_WORLD, shape);
  // Each host keeps its own report: after a network fault its ranks' stderr cannot reach mpirun.
  watchdog_ =
      std::make_unique<Watchdog>(MPI_COMM_WORLD, config.parallel.watchdog_s, host_report_file(config.run.out_dir));
  world_ = make_communicator(MPI_COMM_WORLD, "world", MemorySpace::host);
  node_ = make_communicator(node_handle_.get(), "node", MemorySpace::host);
}

Runtime::~Runtime() = default;

std::unique_ptr<Communicator> host_communicator(MPI_Comm comm, const std::string& name) {
  MpiCommOptions o;
  o.name = name;
  return std::make_unique<MpiCommunicator>(comm, o);
}

std::unique_ptr<Communicator> node_host_communicator() {
  const MpiComm node = split_node(MPI_COMM_WORLD);
  return host_communicator(node.get(), "node");  // (duplicates it)
}

std::unique_ptr<Communicator> Runtime::make_communicator(MPI_Comm comm, const std::string& name, MemorySpace memory,
                                                         bool shm) {
  if (memory == MemorySpace::device && comm_ == CommBackend::nccl) {
    NcclCommOptions o;
    o.name = name;
    o.watchdog = watchdog_.get();
    o.compute_stream = cuda::compute_stream();  // NCCL's stream waits for the compute stream's work (events)
    return make_nccl_communicator(comm, o);
  }
  MpiCommOptions o;
  o.name = name;
  o.memory = memory;
  o.watchdog = watchdog_.get();
  o.shm_allreduce = shm;
  if (shm && memory == MemorySpace::host) {
    auto c = std::make_unique<MpiCommunicator>(comm, o);
    const int nodes = c->shm_allreduce_nodes();
    if (verbose_)
      log0("gradient sums of " + name + ": " +
           (nodes == 0  ? std::string("MPI_Allreduce (one rank per node: no memory to share)")
            : nodes > 1 ? "node-shared memory on each of " + std::to_string(nodes) +
                              " nodes, then MPI_Allreduce among their first ranks"
                        : std::string("node-shared memory (one node)")) +
           " ([parallel] host_allreduce)");
    return c;
  }
  if (memory == MemorySpace::device) {
    o.cuda_aware = cuda_aware_;
    if (!device_memory_) device_memory_ = cuda::make_device_memory();
    o.device = device_memory_.get();
  }
  return std::make_unique<MpiCommunicator>(comm, o);
}

std::unique_ptr<Communicator> Runtime::make_communicator(MeshDim dim, MemorySpace memory, const std::string& suffix) {
  // The gradients' sums (the data-parallel group's own communicator) through node-shared memory
  // unless [parallel] host_allreduce = mpi (hierarchically when the group spans nodes).
  const bool shm =
      dim == MeshDim::dp && suffix.empty() && memory == MemorySpace::host && host_allreduce_ != HostAllreduce::mpi;
  return make_communicator(mesh_->comm(dim), mesh_->group_name(dim) + suffix, memory, shm);
}

std::unique_ptr<Communicator> Runtime::make_communicator(MeshDim dim, const std::vector<int>& members,
                                                         MemorySpace memory, const std::string& suffix) {
  const int coord = mesh_->coord(dim);
  const bool member = std::find(members.begin(), members.end(), coord) != members.end();
  MPI_Comm sub = MPI_COMM_NULL;
  CHECK_MPI(MPI_Comm_split(mesh_->comm(dim), member ? 0 : MPI_UNDEFINED, coord, &sub));
  const MpiComm owned(sub);  // (the communicator made from it holds its own duplicate)
  return member ? make_communicator(sub, mesh_->group_name(dim) + suffix, memory) : nullptr;
}

std::unique_ptr<Communicator> Runtime::make_world_communicator(MemorySpace memory, const std::string& suffix) {
  return make_communicator(MPI_COMM_WORLD, "world" + suffix, memory);
}

std::string Runtime::mesh_table() const {
  std::vector<std::string> header{"rank", "host", "local rank", "device"};
  std::string mine = info_.host + "\t" + std::to_string(info_.local_rank) + "\t" + device_.description;
  for (auto it = kMeshOrder.rbegin(); it != kMeshOrder.rend(); ++it)  // dp first, as people read a layout
    if (*it == MeshDim::dp || *it == MeshDim::pp || mesh_->size(*it) > 1) {
      header.push_back(dim_name(*it));
      mine += "\t" + std::to_string(mesh_->coord(*it));
    }
  const auto rows = gather_strings(MPI_COMM_WORLD, mine);
  if (rows.empty()) return "";
  Table t(header);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::vector<std::string> cells{std::to_string(r)};
    std::istringstream is(rows[r]);
    for (std::string cell; std::getline(is, cell, '\t');) cells.push_back(cell);
    t.add_row(cells);
  }
  return t.render();
}

}  // namespace hpctrain
