// Implementation of the NCCL communicator (comm/nccl_communicator.hpp), CUDA
// builds only. Every operation: the NCCL stream waits for the compute stream
// (event), NCCL runs on its own stream, a completion event is recorded; the
// watchdog polls those events through the collective log.
#include "hpctrain/comm/nccl_communicator.hpp"

#include <cstring>
#include <functional>
#include <mutex>
#include <vector>

#include "hpctrain/comm/mpi_handles.hpp"
#include "hpctrain/comm/nccl_bootstrap.hpp"
#include "hpctrain/comm/p2p_group.hpp"
#include "hpctrain/comm/watchdog.hpp"
#include "hpctrain/core/cuda_check.hpp"
#include "hpctrain/core/log.hpp"

namespace hpctrain {

namespace {

static_assert(sizeof(ncclUniqueId) == kNcclIdBytes, "NCCL unique id size changed");

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::f16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
    case DType::i32: return ncclInt32;
    case DType::i64: return ncclInt64;
    case DType::u8: return ncclUint8;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::avg: return ncclAvg;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::min: return ncclMin;
  }
  return ncclSum;
}

// A completion event shared by the request and the watchdog's poller.
struct Completion {
  cudaEvent_t event = nullptr;
  std::uint64_t log_id = 0;
  bool left = false;  // guarded by the communicator's mutex
  ~Completion() {
    if (event) cudaEventDestroy(event);
  }
};

class NcclCommunicator;

class NcclRequest final : public CommRequest {
 public:
  // `group`: the point-to-point group the operation may still wait in (issued before any query).
  NcclRequest(cudaStream_t compute, std::shared_ptr<Completion> c, P2pGroup* group = nullptr)
      : compute_(compute), c_(std::move(c)), group_(group) {}
  bool test() override {
    if (group_) group_->flush();
    const cudaError_t e = cudaEventQuery(c_->event);
    if (e == cudaErrorNotReady) return false;
    CHECK_CUDA(e);
    return true;
  }
  void wait() override {
    if (group_) group_->flush();
    CHECK_CUDA(cudaStreamWaitEvent(compute_, c_->event, 0));
  }

 private:
  cudaStream_t compute_;
  std::shared_ptr<Completion> c_;
  P2pGroup* group_;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(MPI_Comm comm, NcclCommOptions options)
      : options_(std::move(options)),
        log_(options_.name, world_ranks_of(comm)),
        p2p_({[] { CHECK_NCCL(ncclGroupStart()); }, [] { CHECK_NCCL(ncclGroupEnd()); }}) {
    CHECK_CUDA(cudaGetDevice(&device_));  // the watchdog thread polls on this GPU, not on GPU 0
    compute_ = static_cast<cudaStream_t>(options_.compute_stream);
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CHECK_CUDA(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
    CHECK_CUDA(cudaMalloc(&barrier_buf_, sizeof(int)));
    bootstrap_nccl(
        comm,
        [] {
          ncclUniqueId id;
          CHECK_NCCL(ncclGetUniqueId(&id));
          NcclId out;
          std::memcpy(out.bytes.data(), &id, sizeof(id));
          return out;
        },
        [this](const NcclId& id, int nranks, int rank) {
          ncclUniqueId nid;
          std::memcpy(&nid, id.bytes.data(), sizeof(nid));
          CHECK_NCCL(ncclCommInitRank(&comm_, nranks, nid, rank));
          rank_ = rank;
          size_ = nranks;
        });
    log_.set_poller([this] { poll(); });
    if (options_.watchdog) options_.watchdog->attach(&log_);
  }

  ~NcclCommunicator() override {
    if (options_.watchdog) options_.watchdog->detach(&log_);
    try {
      p2p_.flush();  // a send nobody waited for still reaches its peer
    } catch (const std::exception& e) {
      log_error(std::string("NCCL point-to-point at shutdown: ") + e.what());
    }
    cudaStreamSynchronize(stream_);
    if (comm_) ncclCommDestroy(comm_);
    cudaFree(barrier_buf_);
    cudaEventDestroy(ready_);
    cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& name() const override { return options_.name; }
  const char* backend() const override { return "nccl"; }
  MemorySpace memory() const override { return MemorySpace::device; }
  const CollectiveLog& log() const override { return log_; }

  Request iallreduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) override {
    return launch("allreduce", true, count * dtype_size(t),
                  [&] { CHECK_NCCL(ncclAllReduce(send, recv, count, nccl_type(t), nccl_op(op), comm_, stream_)); });
  }
  Request ibroadcast(void* buf, std::size_t count, DType t, int root) override {
    return launch("broadcast", true, count * dtype_size(t),
                  [&] { CHECK_NCCL(ncclBroadcast(buf, buf, count, nccl_type(t), root, comm_, stream_)); });
  }
  Request iallgather(const void* send, void* recv, std::size_t count, DType t) override {
    return launch("allgather", true, count * dtype_size(t) * size_,
                  [&] { CHECK_NCCL(ncclAllGather(send, recv, count, nccl_type(t), comm_, stream_)); });
  }
  Request ireduce_scatter(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) override {
    return launch("reduce_scatter", true, count * dtype_size(t) * size_,
                  [&] { CHECK_NCCL(ncclReduceScatter(send, recv, count, nccl_type(t), nccl_op(op), comm_, stream_)); });
  }
  // Sends and receives wait in one group until a request of theirs is queried or a collective
  // comes (comm/p2p_group.hpp): a send issued alone would block the stream until the peer's
  // receive, and two ranks that both send first would never get there.
  Request isend(const void* buf, std::size_t count, DType t, int peer) override {
    return defer("send", count * dtype_size(t),
                 [=] { CHECK_NCCL(ncclSend(buf, count, nccl_type(t), peer, comm_, stream_)); });
  }
  Request irecv(void* buf, std::size_t count, DType t, int peer) override {
    return defer("recv", count * dtype_size(t),
                 [=] { CHECK_NCCL(ncclRecv(buf, count, nccl_type(t), peer, comm_, stream_)); });
  }
  Request ibarrier() override {
    return launch("barrier", true, 0, [&] {
      CHECK_NCCL(ncclAllReduce(barrier_buf_, barrier_buf_, 1, ncclInt32, ncclSum, comm_, stream_));
    });
  }

 private:
  Request defer(const char* what, std::size_t bytes, std::function<void()> issue) {
    auto c = std::make_shared<Completion>();
    CHECK_CUDA(cudaEventCreateWithFlags(&c->event, cudaEventDisableTiming));
    c->log_id = log_.enter(what, false, bytes);
    if (p2p_.pending() == 0) {  // the group's first operation: the NCCL stream waits for the compute stream now
      CHECK_CUDA(cudaEventRecord(ready_, compute_));
      CHECK_CUDA(cudaStreamWaitEvent(stream_, ready_, 0));
    }
    p2p_.add(std::move(issue), [this, c] {
      CHECK_CUDA(cudaEventRecord(c->event, stream_));
      std::lock_guard<std::mutex> lock(mu_);
      pending_.push_back(c);
    });
    return std::make_unique<NcclRequest>(compute_, std::move(c), &p2p_);
  }

  template <typename Issue>
  Request launch(const char* what, bool collective, std::size_t bytes, Issue issue) {
    p2p_.flush();  // earlier sends and receives reach NCCL first, in call order
    poll();        // retire finished operations even when no watchdog polls
    CHECK_CUDA(cudaEventRecord(ready_, compute_));
    CHECK_CUDA(cudaStreamWaitEvent(stream_, ready_, 0));
    auto c = std::make_shared<Completion>();
    CHECK_CUDA(cudaEventCreateWithFlags(&c->event, cudaEventDisableTiming));
    c->log_id = log_.enter(what, collective, bytes);
    issue();
    CHECK_CUDA(cudaEventRecord(c->event, stream_));
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_.push_back(c);
    }
    return std::make_unique<NcclRequest>(compute_, std::move(c));
  }

  // Watchdog thread: mark operations whose completion event fired.
  void poll() {
    cudaSetDevice(device_);  // the watchdog's thread starts on GPU 0 (a context there per rank otherwise)
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (cudaEventQuery((*it)->event) == cudaSuccess) {
        log_.leave((*it)->log_id);
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
  }

  NcclCommOptions options_;
  CollectiveLog log_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr, compute_ = nullptr;
  cudaEvent_t ready_ = nullptr;
  int* barrier_buf_ = nullptr;
  int rank_ = 0, size_ = 1, device_ = 0;
  std::mutex mu_;
  std::vector<std::shared_ptr<Completion>> pending_;
  P2pGroup p2p_;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm comm, NcclCommOptions options) {
  return std::make_unique<NcclCommunicator>(comm, std::move(options));
}

}  // namespace hpctrain
