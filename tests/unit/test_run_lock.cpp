// One run per directory (io/run_lock.hpp), in one process: flock locks belong to an open file,
// so a second DirectoryLock on the same directory behaves as a second run's. Also a file system
// without flock (use_flock = false, as Faults::no_flock asks): the record and its heartbeat decide.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "hpctrain/core/error.hpp"
#include "hpctrain/io/run_lock.hpp"

using namespace hpctrain;
namespace fs = std::filesystem;

namespace {
std::string fresh_dir(const char* name) {
  const std::string d = ::testing::TempDir() + name + std::to_string(getpid());
  fs::remove_all(d);
  return d;
}
std::string refusal(const std::string& dir, bool use_flock = true) {
  try {
    DirectoryLock again(dir, "[run] out_dir", 1800, use_flock);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    return e.what();
  }
  return "";
}
void write_record(const std::string& dir, const std::string& host, const std::string& pid, const std::string& job,
                  std::time_t mtime = 0) {
  const std::string f = dir + "/.hpctrain.lock";
  std::ofstream(f) << "host=" << host << "\npid=" << pid << "\njob=" << job << "\nsince=2026-12-01T10:04Z\n";
  if (mtime) {
    const struct timespec t[2] = {{mtime, 0}, {mtime, 0}};
    utimensat(AT_FDCWD, f.c_str(), t, 0);
  }
}
}  // namespace

TEST(DirectoryLock, ASecondRunIsRefusedNamingTheHolderAndTheLockIsReleased) {
  const std::string dir = fresh_dir("hpct_lock_");
  {
    DirectoryLock first(dir, "[run] out_dir", 1800);  // creates the directory
    EXPECT_TRUE(first.kernel_lock());
    EXPECT_EQ(first.note(), "");
    const std::string why = refusal(dir);
    EXPECT_NE(why.find("[run] out_dir " + dir + " is in use by a run on "), std::string::npos) << why;
    EXPECT_NE(why.find(", pid " + std::to_string(getpid()) + ", since "), std::string::npos) << why;
    EXPECT_NE(why.find("wait for it or use another [run] out_dir or [checkpoint] dir"), std::string::npos) << why;
  }
  EXPECT_FALSE(fs::exists(dir + "/.hpctrain.lock"));  // released
  EXPECT_EQ(refusal(dir), "");
  fs::remove_all(dir);
}

TEST(DirectoryLock, ADeadRunsLockIsTakenOverWithANote) {
  const std::string dir = fresh_dir("hpct_lock_dead_");
  fs::create_directories(dir);
  write_record(dir, "node7", "4242", "Slurm job 1234");  // a record, no flock on it: its run died
  DirectoryLock lock(dir, "[run] out_dir", 1800);
  EXPECT_NE(lock.note().find("ended without releasing it (a run on node7, pid 4242, Slurm job 1234"), std::string::npos)
      << lock.note();
  fs::remove_all(dir);
}

TEST(DirectoryLock, WithoutFlockTheRecordAndItsHeartbeatDecide) {
  const std::string dir = fresh_dir("hpct_lock_noflock_");
  fs::create_directories(dir);
  // Another host's run with a fresh heartbeat: refused.
  write_record(dir, "node7", "4242", "Slurm job 1234");
  EXPECT_NE(refusal(dir, false).find("no flock on this file system"), std::string::npos);
  // The same batch job (requeued, on another node): taken over at once.
  setenv("SLURM_JOB_ID", "1234", 1);
  {
    DirectoryLock requeued(dir, "[run] out_dir", 1800, false);
    EXPECT_FALSE(requeued.kernel_lock());
    EXPECT_NE(requeued.note().find("this job's earlier run"), std::string::npos) << requeued.note();
  }
  unsetenv("SLURM_JOB_ID");
  // No heartbeat for an hour: taken over.
  write_record(dir, "node7", "4242", "", std::time(nullptr) - 3600);
  {
    DirectoryLock stale(dir, "[run] out_dir", 1800, false);
    EXPECT_NE(stale.note().find("no heartbeat for"), std::string::npos) << stale.note();
  }
  // This host, a pid that is gone: taken over.
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  write_record(dir, host, "999999999", "");
  {
    DirectoryLock gone(dir, "[run] out_dir", 1800, false);
    EXPECT_NE(gone.note().find("that process is gone"), std::string::npos) << gone.note();
  }
  fs::remove_all(dir);
}

TEST(DirectoryLock, PartialCheckpointFilesAreRemovedOnlyWhenAsked) {
  const std::string dir = fresh_dir("hpct_partials_");
  fs::create_directories(dir);
  std::ofstream(dir + "/.ckpt-00000020.h5.partial") << "x";
  std::ofstream(dir + "/ckpt-00000010.h5") << "x";
  EXPECT_EQ(remove_partial_checkpoints(dir), 1);
  EXPECT_TRUE(fs::exists(dir + "/ckpt-00000010.h5"));
  EXPECT_FALSE(fs::exists(dir + "/.ckpt-00000020.h5.partial"));
  fs::remove_all(dir);
}
