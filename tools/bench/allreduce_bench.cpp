// allreduce-bench: the gradient averages' collective (a float32 sum over the ranks, in place),
// Open MPI's MPI_Allreduce against the node-shared-memory allreduce ([parallel] host_allreduce =
// shm, comm/shm_allreduce.hpp), both through hpctrain's MPI communicator as training uses it, for
// buffer sizes from 4 KiB to 64 MiB, in the style of nccl-tests: time per operation (the slowest
// rank's mean), algorithm bandwidth = bytes / time, bus bandwidth = algbw x 2 (n - 1) / n. Every
// result is checked: exact sums of small integers, the same bits on every rank.
//   mpirun -np 2 allreduce-bench [--smoke]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "hpctrain/comm/mpi_communicator.hpp"
#include "hpctrain/comm/mpi_handles.hpp"

using namespace hpctrain;

namespace {
float value(int rank, std::size_t i) { return static_cast<float>(static_cast<int>((i * 7 + rank * 13) % 101) - 50); }

// Seconds per allreduce of `count` floats (the slowest rank's mean), and whether every result was right.
std::pair<double, bool> measure(MpiCommunicator& comm, std::size_t count, bool smoke) {
  const int rank = comm.rank(), size = comm.size();
  std::vector<float> buf(count);
  auto fill = [&] {
    for (std::size_t i = 0; i < count; ++i) buf[i] = value(rank, i);
  };
  bool ok = true;
  auto check = [&] {
    for (std::size_t i = 0; i < count; i += 1 + count / 4096) {
      float want = 0;
      for (int r = 0; r < size; ++r) want += value(r, i);
      ok = ok && buf[i] == want;
    }
  };
  for (int w = 0; w < 2; ++w) {  // warm-up (and the check of the first results)
    fill();
    comm.allreduce(buf.data(), buf.data(), count, DType::f32, ReduceOp::sum);
    check();
  }
  const int iters =
      smoke ? 3 : static_cast<int>(std::clamp<std::size_t>((std::size_t{256} << 20) / (count * 4 + 1), 5, 200));
  double seconds = 0;
  for (int it = 0; it < iters; ++it) {
    fill();
    comm.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    comm.allreduce(buf.data(), buf.data(), count, DType::f32, ReduceOp::sum);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  check();
  // The same bits everywhere: compare a checksum of the result with rank 0's.
  double sum = 0;
  for (float v : buf) sum += v;
  double first = sum;
  comm.broadcast(&first, 1, DType::f64, 0);
  ok = ok && first == sum;
  double mean = seconds / iters, worst = 0;
  int all_ok = ok ? 1 : 0;
  comm.allreduce(&mean, &worst, 1, DType::f64, ReduceOp::max);
  comm.allreduce(&all_ok, &all_ok, 1, DType::i32, ReduceOp::min);
  return {worst, all_ok == 1};
}
}  // namespace

int main(int argc, char** argv) {
  MpiSession session(&argc, &argv);
  const bool smoke = argc > 1 && std::strcmp(argv[1], "--smoke") == 0;
  MpiCommOptions plain, shm;
  plain.name = "mpi";
  shm.name = "shm";
  shm.shm_allreduce = true;
  MpiCommunicator mpi(MPI_COMM_WORLD, plain), node(MPI_COMM_WORLD, shm);
  const int rank = mpi.rank(), size = mpi.size();
  if (rank == 0) {
    std::printf(
        "# allreduce-bench: %d rank(s) on %d node(s), float32 sum in place; shm = [parallel] host_allreduce = "
        "shm\n",
        size, node.shm_allreduce_nodes());
    std::printf("# %10s %10s   %10s %8s %8s   %10s %8s %8s   %7s  %s\n", "size (B)", "count", "mpi (us)", "algbw",
                "busbw", "shm (us)", "algbw", "busbw", "shm/mpi", "check");
    std::printf("# %10s %10s   %10s %8s %8s   %10s %8s %8s   %7s\n", "", "", "", "(GB/s)", "(GB/s)", "", "(GB/s)",
                "(GB/s)", "speed");
  }
  bool all_ok = true;
  const std::size_t last = smoke ? (std::size_t{256} << 10) : (std::size_t{64} << 20);
  for (std::size_t bytes = 4096; bytes <= last; bytes *= 4) {
    const std::size_t count = bytes / 4;
    const auto [tm, okm] = measure(mpi, count, smoke);
    const auto [ts, oks] = measure(node, count, smoke);
    all_ok = all_ok && okm && oks;
    const double bus = size > 1 ? 2.0 * (size - 1) / size : 1.0, b = static_cast<double>(bytes);
    if (rank == 0)
      std::printf("  %10zu %10zu   %10.1f %8.2f %8.2f   %10.1f %8.2f %8.2f   %6.2fx  %s\n", bytes, count, tm * 1e6,
                  b / tm / 1e9, b / tm / 1e9 * bus, ts * 1e6, b / ts / 1e9, b / ts / 1e9 * bus, tm / ts,
                  okm && oks ? "OK" : "WRONG");
  }
  if (rank == 0) std::printf("# %s: every result exact and the same on every rank\n", all_ok ? "PASS" : "FAIL");
  return all_ok ? 0 : 1;
}
