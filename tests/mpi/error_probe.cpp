// A test program for error reporting through run_and_report (what the
// trainer's main uses):
//   error_probe one-rank R   rank R fails a library call while the others wait
//                            in a barrier: one message tagged with rank R, the
//                            job ends through MPI_Abort with exit code 1
//   error_probe every-rank   every rank finds the same bad input: rank 0 prints
//                            one line, all ranks finalize, exit code 2
#include <mpi.h>

#include <cstdlib>
#include <string>

#include "hpctrain/app/app.hpp"
#include "hpctrain/comm/mpi_handles.hpp"
#include "hpctrain/core/error.hpp"

int main(int argc, char** argv) {
  hpctrain::MpiSession mpi(&argc, &argv);
  const std::string mode = argc > 1 ? argv[1] : "";
  const int failing = argc > 2 ? std::atoi(argv[2]) : 0;
  return hpctrain::run_and_report([&] {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (mode == "every-rank")
      throw hpctrain::bad_input("probe.ini:3: [train] global_batch = 'x': expected integer >= 1");
    if (mode == "one-rank" && rank == failing) {
      int buf = 0;
      CHECK_MPI(MPI_Bcast(&buf, -5, MPI_INT, 0, MPI_COMM_WORLD));  // fails: negative count
    }
    MPI_Barrier(MPI_COMM_WORLD);  // the others wait here until MPI_Abort ends them
    return 0;
  });
}
