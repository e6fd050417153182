// A test program for the collective watchdog: every rank runs N allreduces on
// the world communicator, except that --skip-rank R leaves out allreduce
// number K and goes straight to a barrier. The watchdog must end the job with
// exit code 3 and a message naming allreduce #K and rank R.
//   mpirun -np 4 watchdog_probe --timeout 3 --skip-rank 1 --skip-at 5 [--count 10]
// --tensor-parallel T: the allreduces run on each rank's tensor-parallel group of the mesh
// (runtime/mesh.hpp, T ranks), made and named as the trainer makes it ("tp", "tp[dp=1]").
// --idle S: after the collectives every rank waits S seconds outside any collective, its
// watchdog running, then the other ranks end their watchdogs and rank 0 waits S seconds more:
// the heartbeats must raise no alarm. --stop-rank R: rank R then stops itself (SIGSTOP, its
// watchdog thread too, as a lost host): its neighbours' watchdogs must end the job (exit 3,
// "lost contact"). --report FILE: the watchdogs' report file (one line per host).
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "hpctrain/comm/mpi_communicator.hpp"
#include "hpctrain/comm/mpi_handles.hpp"
#include "hpctrain/comm/watchdog.hpp"
#include "hpctrain/runtime/mesh.hpp"

int main(int argc, char** argv) {
  hpctrain::MpiSession mpi(&argc, &argv);
  double timeout = 3;
  int skip_rank = -1, skip_at = 5, count = 10, tensor_parallel = 1, stop_rank = -1;
  unsigned idle = 0;
  std::string report;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--timeout")
      timeout = std::atof(argv[i + 1]);
    else if (a == "--skip-rank")
      skip_rank = std::atoi(argv[i + 1]);
    else if (a == "--skip-at")
      skip_at = std::atoi(argv[i + 1]);
    else if (a == "--count")
      count = std::atoi(argv[i + 1]);
    else if (a == "--tensor-parallel")
      tensor_parallel = std::atoi(argv[i + 1]);
    else if (a == "--idle")
      idle = static_cast<unsigned>(std::atoi(argv[i + 1]));
    else if (a == "--stop-rank")
      stop_rank = std::atoi(argv[i + 1]);
    else if (a == "--report")
      report = argv[i + 1];
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const hpctrain::Mesh mesh(MPI_COMM_WORLD, hpctrain::make_mesh_shape(size, 1, tensor_parallel));
  auto watchdog = std::make_unique<hpctrain::Watchdog>(MPI_COMM_WORLD, timeout, report);
  {
    hpctrain::MpiCommOptions o;
    o.name = tensor_parallel > 1 ? mesh.group_name(hpctrain::MeshDim::tp) : "world";
    o.watchdog = watchdog.get();
    hpctrain::MpiCommunicator comm(tensor_parallel > 1 ? mesh.comm(hpctrain::MeshDim::tp) : MPI_COMM_WORLD, o);
    for (int k = 1; k <= count; ++k) {
      if (rank == skip_rank && k == skip_at) break;
      float x = 1;
      comm.allreduce(&x, &x, 1, hpctrain::DType::f32, hpctrain::ReduceOp::sum);
    }
    comm.barrier();
  }
  if (rank == stop_rank) std::raise(SIGSTOP);
  if (idle > 0) {
    sleep(idle);
    if (rank != 0) watchdog.reset();  // ends early, and tells its neighbours
    if (rank == 0) sleep(idle);
  }
  watchdog.reset();
  // (With --tensor-parallel the other groups finish first: they wait here, in MPI like the hung
  // group's ranks, for the abort, instead of racing it through MPI_Finalize.)
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::printf("watchdog_probe: all collectives completed\n");
  return 0;
}
