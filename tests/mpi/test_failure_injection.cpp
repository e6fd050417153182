// Checks the MPI test harness itself: a test that fails on one rank only must
// make the whole run fail. Disabled by default; CTest runs it explicitly
// (mpi_failure_propagates) and expects a non-zero exit naming the rank.
#include <gtest/gtest.h>
#include <mpi.h>

TEST(HarnessSelfCheck, DISABLED_FailsOnTheLastRankOnly) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EXPECT_NE(rank, size - 1) << "deliberate failure on rank " << rank;
}
