// Implementation of the MPI communicator (comm/mpi_communicator.hpp): argument
// checks and staging in the caller's thread, MPI non-blocking calls issued and
// progressed by one thread per communicator, results finished (averaged,
// copied back) in the caller's thread on test()/wait().
#include "hpctrain/comm/mpi_communicator.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <utility>

#include "hpctrain/comm/watchdog.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/log.hpp"

namespace hpctrain {

const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::avg: return "avg";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

namespace {

enum class Kind { allreduce, broadcast, allgather, reduce_scatter, send, recv, barrier };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::allreduce: return "allreduce";
    case Kind::broadcast: return "broadcast";
    case Kind::allgather: return "allgather";
    case Kind::reduce_scatter: return "reduce_scatter";
    case Kind::send: return "send";
    case Kind::recv: return "recv";
    case Kind::barrier: return "barrier";
  }
  return "?";
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    case DType::i32: return MPI_INT32_T;
    case DType::i64: return MPI_INT64_T;
    case DType::u8: return MPI_UINT8_T;
    case DType::f16:
    case DType::bf16: return MPI_UINT16_T;  // data movement only
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return MPI_SUM;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
  }
  return MPI_OP_NULL;
}

// Largest count handed to one MPI call (MPI counts are int).
constexpr std::size_t kChunk = std::size_t{1} << 30;

template <typename T>
void scale_host(void* buf, std::size_t n, double f) {
  T* p = static_cast<T*>(buf);
  const T factor = static_cast<T>(f);
  for (std::size_t i = 0; i < n; ++i) p[i] *= factor;
}

}  // namespace

struct MpiCommunicator::Op {
  Kind kind = Kind::barrier;
  const void* send = nullptr;  // caller's buffers
  void* recv = nullptr;
  std::size_t count = 0;
  DType dtype = DType::u8;
  ReduceOp op = ReduceOp::sum;
  int peer = 0;  // root or peer
  std::size_t in_bytes = 0, out_bytes = 0;

  const void* mpi_send = nullptr;  // what MPI sees (caller's or staged)
  void* mpi_recv = nullptr;
  std::vector<void*> pinned;        // staging buffers to release
  void* host_out = nullptr;         // staged output region
  std::vector<unsigned char> temp;  // reduce-scatter in place: result lands here first
  std::vector<MPI_Request> reqs;
  void* ready = nullptr;  // CUDA-aware: the compute stream's marker to wait for before MPI reads

  std::uint64_t log_id = 0;
  bool done = false;      // guarded by the communicator's mu_
  bool finished = false;  // caller-side finish ran
  bool scaled = false;    // an average already scaled by node-shared memory (set before done)
  std::string error;
};

class MpiCommunicator::OpRequest final : public CommRequest {
 public:
  OpRequest(MpiCommunicator* c, std::shared_ptr<Op> op) : comm_(c), op_(std::move(op)) {}
  ~OpRequest() override {
    if (op_->finished) return;
    try {
      wait();
    } catch (const std::exception& e) {
      log_error(std::string("unfinished communication request failed: ") + e.what());
    }
  }
  bool test() override {
    if (!op_->finished) {
      if (!comm_->is_done(*op_)) return false;
      comm_->finish(*op_);
    }
    return true;
  }
  void wait() override {
    if (!op_->finished) {
      comm_->wait_done(*op_);
      comm_->finish(*op_);
    }
  }

 private:
  MpiCommunicator* comm_;
  std::shared_ptr<Op> op_;
};

MpiCommunicator::MpiCommunicator(MPI_Comm comm, MpiCommOptions options)
    : options_(std::move(options)),
      coll_comm_(MpiComm::dup(comm)),
      barrier_comm_(MpiComm::dup(comm)),
      p2p_comm_(MpiComm::dup(comm)),
      facility_comm_(MpiComm::dup(comm)),
      rank_(coll_comm_.rank()),
      size_(coll_comm_.size()),
      log_(options_.name, world_ranks_of(comm)) {
  if (options_.memory == MemorySpace::device && options_.device == nullptr)
    throw Error(ExitCode::internal, Scope::this_rank,
                "MPI communicator '" + options_.name + "' for device buffers needs the device memory operations");
  if (options_.shm_allreduce && options_.memory == MemorySpace::host) {
    shm_ = std::make_unique<ShmAllreduce>(comm);  // (collective, before the progress thread runs)
    if (shm_->widest_node() == 1) shm_.reset();   // one rank per node: nothing to share, MPI's allreduce
  }
  if (options_.watchdog) options_.watchdog->attach(&log_);
  progress_ = std::thread([this] { progress_loop(); });
}

MpiCommunicator::~MpiCommunicator() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (progress_.joinable()) progress_.join();
  if (options_.watchdog) options_.watchdog->detach(&log_);
  for (auto& p : pinned_) options_.device->free_pinned(p.ptr);
}

std::size_t MpiCommunicator::staged_bytes() const { return staged_bytes_; }

// ---- the public operations: describe, check, submit -----------------------------

namespace {
void check_reduction(const std::string& comm, const char* what, DType dtype, ReduceOp op) {
  if (dtype == DType::f16 || dtype == DType::bf16)
    throw Error(ExitCode::internal, Scope::this_rank,
                std::string(what) + " on '" + comm + "': the MPI communicator cannot reduce " + dtype_name(dtype) +
                    " (MPI has no such type); reduce in f32");
  if (op == ReduceOp::avg && !dtype_is_float(dtype))
    throw Error(ExitCode::internal, Scope::this_rank,
                std::string(what) + " on '" + comm + "': avg needs a floating-point dtype, got " + dtype_name(dtype));
}
void check_rank(const std::string& comm, const char* what, int r, int size) {
  if (r < 0 || r >= size)
    throw Error(ExitCode::internal, Scope::this_rank,
                std::string(what) + " on '" + comm + "': rank " + std::to_string(r) + " outside 0.." +
                    std::to_string(size - 1));
}
void check_int_count(const std::string& comm, const char* what, std::size_t count) {
  if (count > static_cast<std::size_t>(INT_MAX))
    throw Error(ExitCode::internal, Scope::this_rank,
                std::string(what) + " on '" + comm + "': " + std::to_string(count) +
                    " elements per rank exceed MPI's int count; split the buffer above the seam");
}
}  // namespace

Request MpiCommunicator::iallreduce(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op) {
  check_reduction(name(), "allreduce", dtype, op);
  auto o = std::make_shared<Op>();
  o->kind = Kind::allreduce;
  o->send = send, o->recv = recv, o->count = count, o->dtype = dtype, o->op = op;
  o->in_bytes = o->out_bytes = count * dtype_size(dtype);
  return submit(std::move(o));
}

Request MpiCommunicator::ibroadcast(void* buf, std::size_t count, DType dtype, int root) {
  check_rank(name(), "broadcast", root, size_);
  auto o = std::make_shared<Op>();
  o->kind = Kind::broadcast;
  o->send = buf, o->recv = buf, o->count = count, o->dtype = dtype, o->peer = root;
  o->in_bytes = rank_ == root ? count * dtype_size(dtype) : 0;
  o->out_bytes = count * dtype_size(dtype);
  return submit(std::move(o));
}

Request MpiCommunicator::iallgather(const void* send, void* recv, std::size_t count, DType dtype) {
  check_int_count(name(), "allgather", count);
  auto o = std::make_shared<Op>();
  o->kind = Kind::allgather;
  o->send = send, o->recv = recv, o->count = count, o->dtype = dtype;
  o->in_bytes = count * dtype_size(dtype);
  o->out_bytes = o->in_bytes * static_cast<std::size_t>(size_);
  return submit(std::move(o));
}

Request MpiCommunicator::ireduce_scatter(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op) {
  check_reduction(name(), "reduce_scatter", dtype, op);
  check_int_count(name(), "reduce_scatter", count);
  auto o = std::make_shared<Op>();
  o->kind = Kind::reduce_scatter;
  o->send = send, o->recv = recv, o->count = count, o->dtype = dtype, o->op = op;
  o->out_bytes = count * dtype_size(dtype);
  o->in_bytes = o->out_bytes * static_cast<std::size_t>(size_);
  return submit(std::move(o));
}

Request MpiCommunicator::isend(const void* buf, std::size_t count, DType dtype, int peer) {
  check_rank(name(), "send", peer, size_);
  check_int_count(name(), "send", count);
  auto o = std::make_shared<Op>();
  o->kind = Kind::send;
  o->send = buf, o->count = count, o->dtype = dtype, o->peer = peer;
  o->in_bytes = count * dtype_size(dtype);
  return submit(std::move(o));
}

Request MpiCommunicator::irecv(void* buf, std::size_t count, DType dtype, int peer) {
  check_rank(name(), "recv", peer, size_);
  check_int_count(name(), "recv", count);
  auto o = std::make_shared<Op>();
  o->kind = Kind::recv;
  o->recv = buf, o->count = count, o->dtype = dtype, o->peer = peer;
  o->out_bytes = count * dtype_size(dtype);
  return submit(std::move(o));
}

Request MpiCommunicator::ibarrier() {
  auto o = std::make_shared<Op>();
  o->kind = Kind::barrier;
  return submit(std::move(o));
}

float MpiCommunicator::shm_scale(Op& op) const {
  if (op.op != ReduceOp::avg || size_ <= 1) return 1.f;
  op.scaled = true;  // (finish does not scale it again)
  return static_cast<float>(1.0 / size_);
}

bool MpiCommunicator::through_shm(const Op& op) const {
  if (shm_ && op.dtype == DType::i64 && op.kind == Kind::reduce_scatter)  // (exact sums: reproducible = layout)
    return op.op == ReduceOp::sum && shm_->nodes() == 1;
  if (!shm_ || op.dtype != DType::f32) return false;
  const bool sum = op.op == ReduceOp::sum || op.op == ReduceOp::avg;  // (avg: scaled in the sum, shm_scale)
  switch (op.kind) {
    case Kind::allreduce: return sum;
    case Kind::reduce_scatter: return sum && shm_->nodes() == 1;
    case Kind::allgather: return shm_->nodes() == 1;
    default: return false;
  }
}

Request MpiCommunicator::submit(std::shared_ptr<Op> op) {
  op->mpi_send = op->send;
  op->mpi_recv = op->recv;
  const bool in_place_rs =
      op->kind == Kind::reduce_scatter && op->count > 0 &&
      static_cast<const unsigned char*>(op->send) + static_cast<std::size_t>(rank_) * op->out_bytes ==
          static_cast<unsigned char*>(op->recv);
  const bool staged = options_.memory == MemorySpace::device && (!options_.cuda_aware || in_place_rs);
  if (staged) stage_in(*op);
  // Device buffers straight to MPI: the kernels that write them may still be queued. The progress
  // thread waits for this marker before the MPI call (the caller's thread goes on computing).
  if (options_.memory == MemorySpace::device && !staged) op->ready = options_.device->record_marker();
  if (in_place_rs && !through_shm(*op)) op->temp.resize(op->out_bytes);  // (shared memory sums in place)
  const bool collective = op->kind != Kind::send && op->kind != Kind::recv;
  // (the whole buffer: an all-gather's output, a reduce-scatter's input)
  const bool whole = op->kind == Kind::allgather || op->kind == Kind::reduce_scatter;
  op->log_id = log_.enter(kind_name(op->kind), collective,
                          op->count * dtype_size(op->dtype) * static_cast<std::size_t>(whole ? size_ : 1));
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(op);
  }
  wake_.notify_one();
  return std::make_unique<OpRequest>(this, std::move(op));
}

// Maps the caller's device regions onto pinned host memory, preserving the
// in-place relation between input and output, and copies the input in.
void MpiCommunicator::stage_in(Op& op) {
  auto addr = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p); };
  const std::uintptr_t in_lo = addr(op.send), in_hi = in_lo + op.in_bytes;
  const std::uintptr_t out_lo = addr(op.recv), out_hi = out_lo + op.out_bytes;
  const bool has_in = op.send && op.in_bytes, has_out = op.recv && op.out_bytes;
  if (has_in && has_out && in_lo < out_hi && out_lo < in_hi) {  // overlapping: one mirror of the hull
    const std::uintptr_t lo = std::min(in_lo, out_lo), hi = std::max(in_hi, out_hi);
    auto* host = static_cast<unsigned char*>(acquire_pinned(hi - lo));
    op.pinned.push_back(host);
    op.mpi_send = host + (in_lo - lo);
    op.mpi_recv = host + (out_lo - lo);
  } else {
    if (has_in) {
      op.pinned.push_back(acquire_pinned(op.in_bytes));
      op.mpi_send = op.pinned.back();
    }
    if (has_out) {
      op.pinned.push_back(acquire_pinned(op.out_bytes));
      op.mpi_recv = op.pinned.back();
    }
  }
  if (has_in) options_.device->copy_to_host(const_cast<void*>(op.mpi_send), op.send, op.in_bytes);
  op.host_out = has_out ? op.mpi_recv : nullptr;
  std::lock_guard<std::mutex> lock(pinned_mu_);
  staged_bytes_ += (has_in ? op.in_bytes : 0) + (has_out ? op.out_bytes : 0);
}

// ---- the progress thread -------------------------------------------------------------

// Progress thread. Collectives run as blocking MPI calls here, in issue order:
// Open MPI's tuned blocking algorithms were 2.6x faster than its non-blocking
// (libnbc) ones for a 7.5 MB allreduce on 2 ranks (1.1 vs 2.9 ms), and the
// caller computes meanwhile anyway. Point-to-point stays non-blocking (so
// pipeline neighbours cannot deadlock) and is progressed by MPI meanwhile.
void MpiCommunicator::start(Op& op) {
  const MPI_Datatype t = mpi_type(op.dtype);
  const std::size_t es = dtype_size(op.dtype);
  const auto* in = static_cast<const unsigned char*>(op.mpi_send);
  auto* out = static_cast<unsigned char*>(op.mpi_recv);
  MPI_Comm c = coll_comm_.get();
  auto check = [&](int rc, const char* call) {
    if (rc != MPI_SUCCESS)
      throw Error(ExitCode::internal, Scope::this_rank,
                  format_call_error(__FILE__, __LINE__, call, "MPI", mpi_error_text(rc)) + " [" + kind_name(op.kind) +
                      " on '" + name() + "']");
  };
  MPI_Request r = MPI_REQUEST_NULL;
  switch (op.kind) {
    case Kind::allreduce:
      if (through_shm(op)) {
        shm_->sum(reinterpret_cast<const float*>(in), reinterpret_cast<float*>(out), op.count, shm_scale(op));
        break;
      }
      for (std::size_t off = 0; off < op.count; off += kChunk) {
        const int n = static_cast<int>(std::min(kChunk, op.count - off));
        const void* s = in == out ? MPI_IN_PLACE : static_cast<const void*>(in + off * es);
        check(MPI_Allreduce(s, out + off * es, n, t, mpi_op(op.op), c), "MPI_Allreduce");
      }
      break;
    case Kind::broadcast:
      for (std::size_t off = 0; off < op.count; off += kChunk) {
        const int n = static_cast<int>(std::min(kChunk, op.count - off));
        check(MPI_Bcast(out + off * es, n, t, op.peer, c), "MPI_Bcast");
      }
      break;
    case Kind::allgather: {
      if (through_shm(op)) {
        shm_->allgather(reinterpret_cast<const float*>(in), reinterpret_cast<float*>(out), op.count);
        break;
      }
      const bool in_place = op.count > 0 && in == out + static_cast<std::size_t>(rank_) * op.in_bytes;
      check(MPI_Allgather(in_place ? MPI_IN_PLACE : in, static_cast<int>(op.count), t, out, static_cast<int>(op.count),
                          t, c),
            "MPI_Allgather");
      break;
    }
    case Kind::reduce_scatter: {
      if (through_shm(op) && op.dtype == DType::i64) {
        shm_->reduce_scatter(reinterpret_cast<const std::int64_t*>(in), reinterpret_cast<std::int64_t*>(out), op.count);
        break;
      }
      if (through_shm(op)) {  // (in place too: no temporary)
        shm_->reduce_scatter(reinterpret_cast<const float*>(in), reinterpret_cast<float*>(out), op.count,
                             shm_scale(op));
        break;
      }
      void* dst = op.temp.empty() ? static_cast<void*>(out) : op.temp.data();
      check(MPI_Reduce_scatter_block(in, dst, static_cast<int>(op.count), t, mpi_op(op.op), c),
            "MPI_Reduce_scatter_block");
      break;
    }
    case Kind::barrier: check(MPI_Barrier(barrier_comm_.get()), "MPI_Barrier"); break;
    case Kind::send:
      // The request is filled by the call; push it only afterwards.
      check(MPI_Isend(in, static_cast<int>(op.count), t, op.peer, 0, p2p_comm_.get(), &r), "MPI_Isend");
      op.reqs.push_back(r);
      break;
    case Kind::recv:
      check(MPI_Irecv(out, static_cast<int>(op.count), t, op.peer, 0, p2p_comm_.get(), &r), "MPI_Irecv");
      op.reqs.push_back(r);
      break;
  }
}

void MpiCommunicator::progress_loop() {
  std::vector<std::shared_ptr<Op>> in_flight;
  std::string bind_error;
  try {  // this thread's CUDA calls (markers) on the process's GPU, not GPU 0
    if (options_.memory == MemorySpace::device) options_.device->bind_thread();
  } catch (const std::exception& e) {
    bind_error = e.what();
  }
  for (;;) {
    std::deque<std::shared_ptr<Op>> starting;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (in_flight.empty()) wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_ && queue_.empty() && in_flight.empty()) return;
      starting.swap(queue_);
    }
    std::vector<std::shared_ptr<Op>> completed;
    for (auto& op : starting) {
      try {
        if (!bind_error.empty()) throw Error(ExitCode::internal, Scope::this_rank, bind_error);
        if (op->ready) {
          void* ready = std::exchange(op->ready, nullptr);
          options_.device->wait_marker(ready);
        }
        start(*op);
        if (op->reqs.empty())
          completed.push_back(op);  // a collective: done when start returns
        else
          in_flight.push_back(op);
      } catch (const std::exception& e) {
        op->error = e.what();
        completed.push_back(op);
      }
    }
    for (auto it = in_flight.begin(); it != in_flight.end();) {
      int flag = 0;
      const int rc = MPI_Testall(static_cast<int>((*it)->reqs.size()), (*it)->reqs.data(), &flag, MPI_STATUSES_IGNORE);
      if (rc != MPI_SUCCESS) {
        (*it)->error = format_call_error(__FILE__, __LINE__, "MPI_Testall", "MPI", mpi_error_text(rc)) + " [" +
                       kind_name((*it)->kind) + " on '" + name() + "']";
        flag = 1;
      }
      if (flag) {
        completed.push_back(*it);
        it = in_flight.erase(it);
      } else {
        ++it;
      }
    }
    if (!completed.empty()) {
      for (auto& op : completed) log_.leave(op->log_id);
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (auto& op : completed) op->done = true;
      }
      done_.notify_all();
    }
    if (!in_flight.empty()) std::this_thread::yield();
  }
}

// ---- the caller's side of completion ----------------------------------------------------

bool MpiCommunicator::is_done(Op& op) {
  std::lock_guard<std::mutex> lock(mu_);
  return op.done;
}

void MpiCommunicator::wait_done(Op& op) {
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return op.done; });
}

void MpiCommunicator::finish(Op& op) {
  op.finished = true;
  if (op.error.empty()) {
    if (!op.temp.empty()) std::memcpy(op.host_out ? op.host_out : op.mpi_recv, op.temp.data(), op.temp.size());
    const bool reduced = op.kind == Kind::allreduce || op.kind == Kind::reduce_scatter;
    if (reduced && op.op == ReduceOp::avg && size_ > 1 && !op.scaled) {
      const double f = 1.0 / size_;
      const bool on_host = options_.memory == MemorySpace::host || op.host_out != nullptr;
      if (!on_host)
        options_.device->scale(op.mpi_recv, op.count, op.dtype, f);
      else if (op.dtype == DType::f32)
        scale_host<float>(op.mpi_recv, op.count, f);
      else
        scale_host<double>(op.mpi_recv, op.count, f);
    }
    if (op.host_out) options_.device->copy_to_device(op.recv, op.host_out, op.out_bytes);
  }
  for (void* p : op.pinned) release_pinned(p);
  op.pinned.clear();
  if (!op.error.empty()) throw Error(ExitCode::internal, Scope::this_rank, op.error);
}

void* MpiCommunicator::acquire_pinned(std::size_t bytes) {
  std::lock_guard<std::mutex> lock(pinned_mu_);
  for (auto& p : pinned_)
    if (!p.busy && p.bytes >= bytes) {
      p.busy = true;
      return p.ptr;
    }
  pinned_.push_back({options_.device->alloc_pinned(bytes), bytes, true});
  return pinned_.back().ptr;
}

void MpiCommunicator::release_pinned(void* ptr) {
  std::lock_guard<std::mutex> lock(pinned_mu_);
  for (auto& p : pinned_)
    if (p.ptr == ptr) p.busy = false;
}

MPI_Comm mpi_facility_handle(Communicator& comm) {
  auto* mpi = dynamic_cast<MpiCommunicator*>(&comm);
  HPCT_CHECK(mpi != nullptr, "communicator '" + comm.name() + "' (" + comm.backend() + ") has no MPI handle");
  return mpi->facility_handle();
}

}  // namespace hpctrain
