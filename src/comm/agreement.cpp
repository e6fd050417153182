// Agreements over a host communicator (comm/agreement.hpp).
#include "hpctrain/comm/agreement.hpp"

#include <chrono>
#include <thread>

#include "hpctrain/core/error.hpp"

namespace hpctrain {

void broadcast_text(Communicator& comm, std::string& text, int root) {
  HPCT_CHECK(comm.memory() == MemorySpace::host, "broadcast_text needs a host communicator");
  std::int64_t len = static_cast<std::int64_t>(text.size());
  comm.broadcast(&len, 1, DType::i64, root);
  text.resize(static_cast<std::size_t>(len));
  if (len > 0) comm.broadcast(text.data(), static_cast<std::size_t>(len), DType::u8, root);
}

void broadcast_text_polled(Communicator& comm, std::string& text, int root, double poll_s) {
  HPCT_CHECK(comm.memory() == MemorySpace::host, "broadcast_text_polled needs a host communicator");
  std::int64_t len = static_cast<std::int64_t>(text.size());
  Request r = comm.ibroadcast(&len, 1, DType::i64, root);
  while (!r->test()) std::this_thread::sleep_for(std::chrono::duration<double>(poll_s));
  text.resize(static_cast<std::size_t>(len));
  if (len > 0) comm.broadcast(text.data(), static_cast<std::size_t>(len), DType::u8, root);
}

void raise_if_any(Communicator& comm, const std::string& local_error, ExitCode code) {
  const int size = comm.size();
  const int mine = local_error.empty() ? size : comm.rank();
  int first = size;
  comm.allreduce(&mine, &first, 1, DType::i32, ReduceOp::min);
  if (first == size) return;
  std::string text = comm.rank() == first ? local_error : "";
  broadcast_text(comm, text, first);
  throw Error(code, Scope::every_rank, text);
}

std::vector<std::string> compute_on_root(Communicator& comm, const std::function<std::vector<std::string>()>& work) {
  std::vector<std::string> out;
  std::string error;
  std::int64_t head[2] = {0, 0};  // exit code of the error, number of strings
  if (comm.rank() == 0) {
    try {
      out = work();
    } catch (const Error& e) {
      error = e.what();
      head[0] = static_cast<std::int64_t>(e.code());
    }
    head[1] = static_cast<std::int64_t>(out.size());
  }
  broadcast_text(comm, error, 0);
  comm.broadcast(head, 2, DType::i64, 0);
  if (!error.empty()) throw Error(static_cast<ExitCode>(head[0]), Scope::every_rank, error);
  out.resize(static_cast<std::size_t>(head[1]));
  for (auto& s : out) broadcast_text(comm, s, 0);
  return out;
}

}  // namespace hpctrain
