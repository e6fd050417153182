// GoogleTest main for tests run under mpirun: MPI initialized like the
// trainer, only rank 0 prints GoogleTest's report, other ranks print their
// failed assertions tagged with the rank, and the exit code is non-zero when
// any rank failed.
#include <gtest/gtest.h>

#include <cstdio>

#include "hpctrain/comm/mpi_handles.hpp"

namespace {
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?", r.line_number(),
                 r.message());
  }

 private:
  int rank_;
};
}  // namespace

int main(int argc, char** argv) {
  ::testing::GTEST_FLAG(color) = "no";  // mpirun output is not a terminal
  hpctrain::MpiSession mpi(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (rank != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  const int mine = RUN_ALL_TESTS();
  int worst = 0;
  MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  int failed_ranks = 0;
  const int failed = mine != 0;
  MPI_Reduce(&failed, &failed_ranks, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("%s on %d rank(s)%s\n", worst ? "FAILED" : "PASSED", size,
                worst ? (" (" + std::to_string(failed_ranks) + " rank(s) failed)").c_str() : "");
  return worst;
}
