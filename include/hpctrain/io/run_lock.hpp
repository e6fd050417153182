// One run per output and checkpoint directory (docs/checkpoints.md, "One run per directory"):
// a lock file `<dir>/.hpctrain.lock` holding the run's host, pid, batch job and start time,
// locked with flock(2) while the run lives. A second run is refused at once, naming the holder.
// The kernel drops the flock when the holder dies (kill -9, a node that went away with a file
// system that supports flock), so a lock file without a flock on it is a dead run's: taken
// over with a warning. Where the file system has no flock (Lustre mounted without it), the
// file's contents decide: this host and the pid is gone, or its heartbeat (the file's mtime,
// touched at every log interval) older than `stale_s`, and it is taken over with a warning.
// A lock written by this run's own batch job (a requeued Slurm job, usually on another node) is
// taken over at once. The lock is released (the file removed) when the object is destroyed.
#pragma once

#include <string>

namespace hpctrain {

class DirectoryLock {
 public:
  // Creates `dir` when missing and takes its lock, or throws bad_input (exit 2) naming the
  // holder: "<what> <dir> is in use by a run on node7, pid 4242, Slurm job 1234, since
  // 2026-12-01T10:04Z; wait for it or use another [run] out_dir or [checkpoint] dir".
  // use_flock = false: as on a file system without flock (tests: Faults::no_flock), the record and
  // its heartbeat alone decide.
  DirectoryLock(const std::string& dir, const std::string& what, double stale_s, bool use_flock = true);
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

  // What taking the lock found: a dead run's lock taken over, or this job's earlier run ("" when
  // the directory was free).
  const std::string& note() const { return note_; }
  bool kernel_lock() const { return kernel_; }  // flock held (false: the file system has none)
  void heartbeat();                             // the file's mtime: now

 private:
  std::string path_, note_;
  int fd_ = -1;
  bool kernel_ = false;
};

// The batch job this process belongs to ("Slurm job 1234", "PBS job 99.server", "LSF job 7"), or "".
std::string batch_job();

// Partial checkpoint files (`.ckpt-*.partial`) in `dir`, of runs that died while writing:
// removed by the run that holds the directory's lock, at its start. Returns how many.
int remove_partial_checkpoints(const std::string& dir);

}  // namespace hpctrain
