// The error family: message format (rank, host, file:line, call, library
// text), the HDF5 check against a real failing call, internal checks, the
// table printer and the watchdog's diagnosis (pure parts).
#include <gtest/gtest.h>

#include <hdf5.h>
#include <chrono>
#include <csignal>
#include <thread>

#include "hpctrain/comm/startup_guard.hpp"
#include "hpctrain/comm/watchdog.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/signals.hpp"
#include "hpctrain/core/table.hpp"

using namespace hpctrain;

TEST(Errors, CallErrorFormat) {
  const std::string m =
      format_call_error("src/x.cpp", 12, "cudaMalloc(&p, n)", "CUDA", "cudaErrorMemoryAllocation: out of memory");
  EXPECT_NE(m.find("[rank "), std::string::npos);
  EXPECT_NE(m.find(" on "), std::string::npos);
  EXPECT_NE(m.find("] src/x.cpp:12: cudaMalloc(&p, n) failed: CUDA cudaErrorMemoryAllocation: out of memory"),
            std::string::npos)
      << m;
}

TEST(Errors, LibraryRaiseIsInternalAndThisRank) {
  try {
    detail::raise_library("NCCL", "unhandled system error", "ncclCommInitRank(...)", "f.cpp", 3);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::internal);
    EXPECT_EQ(e.scope(), Scope::this_rank);
    EXPECT_NE(std::string(e.what()).find("f.cpp:3: ncclCommInitRank(...) failed: NCCL unhandled system error"),
              std::string::npos);
  }
}

TEST(Errors, CheckH5ReportsTheHdf5Stack) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  try {
    CHECK_H5(H5Fopen("/no/such/dir/file.h5", H5F_ACC_RDONLY, H5P_DEFAULT));
    FAIL() << "no throw";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("test_errors.cpp:"), std::string::npos) << m;
    EXPECT_NE(m.find("H5Fopen(\"/no/such/dir/file.h5\", H5F_ACC_RDONLY, H5P_DEFAULT) failed: HDF5"), std::string::npos)
        << m;
    EXPECT_NE(m.find("unable to open file"), std::string::npos) << m;
    EXPECT_NE(m.find("/no/such/dir/file.h5"), std::string::npos) << m;  // the innermost entry names the file
  }
}

TEST(Errors, CheckH5PassesValuesThrough) {
  const hid_t space = CHECK_H5(H5Screate(H5S_SCALAR));
  EXPECT_GE(space, 0);
  CHECK_H5(H5Sclose(space));
}

TEST(Errors, InternalCheck) {
  EXPECT_NO_THROW(HPCT_CHECK(1 + 1 == 2, "math"));
  try {
    HPCT_CHECK(1 + 1 == 3, "arithmetic is broken");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::internal);
    EXPECT_NE(std::string(e.what()).find("internal error: arithmetic is broken (check '1 + 1 == 3' failed)"),
              std::string::npos);
  }
}

TEST(Errors, BadInputIsEveryRankExitTwo) {
  const Error e = bad_input("x");
  EXPECT_EQ(static_cast<int>(e.code()), 2);
  EXPECT_EQ(e.scope(), Scope::every_rank);
  EXPECT_EQ(static_cast<int>(ExitCode::collective_timeout), 3);
  EXPECT_EQ(static_cast<int>(ExitCode::preempted), 10);
}

TEST(Table, AlignsColumns) {
  Table t({"rank", "host", "GB/s"});
  t.add_row({"0", "node-a", "12.5"});
  t.add_row({"10", "b", "3.25"});
  EXPECT_EQ(t.render(),
            "rank  host    GB/s\n"
            "------------------\n"
            "   0  node-a  12.5\n"
            "  10  b       3.25\n");
  EXPECT_THROW(t.add_row({"1"}), Error);
}

namespace {
RankState in(int rank, const std::string& op, std::uint64_t n, std::uint64_t coll) {
  RankState s;
  s.world_rank = rank;
  s.answered = true;
  s.in_collective = true;
  s.collectives_entered = coll;
  s.oldest.op = op;
  s.oldest.op_number = n;
  s.oldest.collective = coll;
  s.oldest_age = 3.2;
  return s;
}
}  // namespace

TEST(WatchdogDiagnosis, NamesTheCollectiveAndTheMissingRank) {
  // Rank 1 skipped allreduce #5 and sits in barrier #1; 0, 2, 3 wait in allreduce #5.
  const std::vector<RankState> states{in(0, "allreduce", 5, 5), in(1, "barrier", 1, 5), in(2, "allreduce", 5, 5),
                                      in(3, "allreduce", 5, 5)};
  int reporter = -1;
  const std::string m = diagnose_timeout("world", states[0].oldest, 3.0, 0, states, &reporter);
  EXPECT_EQ(reporter, 0);
  EXPECT_NE(m.find("allreduce #5 (collective #5) on communicator 'world' (4 ranks) did not complete within 3.0 s"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("ranks that did not arrive: rank 1 (in barrier #1 (collective #5) for 3.2 s)"), std::string::npos)
      << m;
  EXPECT_NE(m.find("arrived: 0, 2, 3"), std::string::npos) << m;
  // Rank 1 sees the same picture and leaves the report to rank 0.
  reporter = -1;
  diagnose_timeout("world", states[1].oldest, 3.0, 1, states, &reporter);
  EXPECT_EQ(reporter, 0);
}

TEST(WatchdogDiagnosis, TieGoesToTheGroupWithTheLowestRank) {
  const std::vector<RankState> states{in(0, "allreduce", 2, 2), in(1, "barrier", 1, 2)};
  int reporter = -1;
  diagnose_timeout("dp[0]", states[1].oldest, 1.0, 1, states, &reporter);
  EXPECT_EQ(reporter, 0);
}

TEST(WatchdogDiagnosis, SilentAndIdleRanks) {
  RankState silent;
  silent.world_rank = 2;  // answered = false
  RankState idle;
  idle.world_rank = 1;
  idle.answered = true;
  idle.collectives_entered = 4;
  idle.elsewhere = "recv #3 (collective #0) on 'mp[0]' for 9.0 s";
  const std::vector<RankState> states{in(0, "allreduce", 5, 5), idle, silent};
  int reporter = -1;
  const std::string m = diagnose_timeout("world", states[0].oldest, 2.0, 0, states, &reporter);
  EXPECT_NE(m.find("rank 1 (not in a collective on 'world'; busy in recv #3"), std::string::npos) << m;
  EXPECT_NE(m.find("rank 2 (no answer from its watchdog)"), std::string::npos) << m;
}

TEST(WatchdogDiagnosis, StateRoundTrip) {
  RankState s = in(3, "reduce_scatter", 17, 40);
  s.elsewhere = "barrier #2 on 'dp[1]' for 1.0 s";
  const RankState r = decode_state(encode_state(s), 3);
  EXPECT_TRUE(r.answered);
  EXPECT_EQ(r.oldest.op, "reduce_scatter");
  EXPECT_EQ(r.oldest.op_number, 17u);
  EXPECT_EQ(r.oldest.collective, 40u);
  EXPECT_EQ(r.collectives_entered, 40u);
  EXPECT_EQ(r.elsewhere, s.elsewhere);
  EXPECT_FALSE(decode_state("garbage", 1).answered);
}

TEST(CollectiveLog, NumbersCollectivesAndOps) {
  CollectiveLog log("world", {0, 1});
  const auto a = log.enter("allreduce", true);
  const auto s = log.enter("send", false);
  const auto b = log.enter("allreduce", true);
  auto snap = log.snapshot();
  ASSERT_EQ(snap.in_flight.size(), 3u);
  EXPECT_EQ(snap.collectives_entered, 2u);
  EXPECT_EQ(snap.in_flight[0].op_number, 1u);
  EXPECT_EQ(snap.in_flight[1].collective, 0u);
  EXPECT_EQ(snap.in_flight[2].op_number, 2u);
  EXPECT_EQ(snap.in_flight[2].collective, 2u);
  log.leave(a);
  log.leave(s);
  snap = log.snapshot();
  ASSERT_EQ(snap.in_flight.size(), 1u);
  EXPECT_EQ(snap.in_flight[0].id, b);
}

// Preemption signals: the first SIGTERM/SIGUSR1/SIGINT is only noted (the training loop
// checkpoints and exits 10); a second one 1 s or more later ends the process at once with
// 128 + signal, one within 1 s is the same request again.
TEST(PreemptionSignals, FirstIsNotedSecondExitsAtOnce) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // other tests left threads behind
  install_preemption_signals();
  EXPECT_EQ(pending_preemption_signal(), 0);
  std::raise(SIGUSR1);
  EXPECT_EQ(pending_preemption_signal(), SIGUSR1);
  std::raise(SIGTERM);  // within 1 s: the same request again (mpirun forwarding Ctrl-C), not "now"
  EXPECT_EQ(pending_preemption_signal(), SIGUSR1);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_EXIT(std::raise(SIGTERM), ::testing::ExitedWithCode(128 + SIGTERM), "second signal");
  restore_preemption_signals();
  install_preemption_signals();  // a new install starts clean
  EXPECT_EQ(pending_preemption_signal(), 0);
  std::raise(SIGINT);  // Ctrl-C: the same way
  EXPECT_EQ(pending_preemption_signal(), SIGINT);
  restore_preemption_signals();
}

TEST(StartupGuard, TheTimeoutNamesThePhaseTheLimitAndTheOption) {
  EXPECT_EQ(describe_startup_timeout(20, "setting up the ranks"),
            "start-up timeout: still setting up the ranks after 20 s; the ranks wait for one another there (a host "
            "that cannot be reached, a rank that did not start, a configuration file on a file system that does not "
            "answer) and the collective watchdog does not run yet (trainer --startup-timeout sets this limit). "
            "Aborting the job with exit code 3.");
}

TEST(StartupGuard, FinishedInTimeItEndsQuietlyAndAtOnce) {  // (past its limit it would abort this test program)
  const auto t0 = std::chrono::steady_clock::now();
  {
    StartupGuard guard(30);
    guard.phase("testing");
    guard.finish();
    guard.finish();  // (the destructor calls it again)
  }
  StartupGuard off(0);  // no limit: no thread
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
}

TEST(WatchdogDiagnosis, LostContactNamesTheSilentRankAndWhatThisRankDoes) {
  const std::string m = describe_lost_contact(3, 6.04, 0.75, "in allreduce #80 (collective #92) on 'dp' for 5.2 s");
  EXPECT_EQ(m,
            "lost contact: no heartbeat from rank 3's watchdog for 6.0 s (one is sent every 0.8 s; its host is down or "
            "cut off from this one); this rank is in allreduce #80 (collective #92) on 'dp' for 5.2 s. Aborting the "
            "job with exit code 3.");
}
