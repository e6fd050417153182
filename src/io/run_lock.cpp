// Directory locks (io/run_lock.hpp).
#include "hpctrain/io/run_lock.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <sstream>

#include "hpctrain/core/error.hpp"

namespace fs = std::filesystem;

namespace hpctrain {

namespace {
std::string utc_now() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%MZ", &tm);
  return buf;
}

// The record in a lock file: key=value lines (host, pid, job, since).
std::map<std::string, std::string> read_record(int fd) {
  std::string text(4096, '\0');
  const ssize_t n = pread(fd, text.data(), text.size(), 0);
  text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (const auto eq = line.find('='); eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  return out;
}

std::string holder_text(std::map<std::string, std::string> r) {
  return "a run on " + r["host"] + ", pid " + r["pid"] + (r["job"].empty() ? "" : ", " + r["job"]) + ", since " +
         r["since"];
}
}  // namespace

std::string batch_job() {
  if (const char* j = std::getenv("SLURM_JOB_ID")) return std::string("Slurm job ") + j;
  if (const char* j = std::getenv("PBS_JOBID")) return std::string("PBS job ") + j;
  if (const char* j = std::getenv("LSB_JOBID")) return std::string("LSF job ") + j;
  return "";
}

DirectoryLock::DirectoryLock(const std::string& dir, const std::string& what, double stale_s, bool use_flock) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw bad_input(what + " '" + dir + "' cannot be created: " + ec.message());
  path_ = (fs::path(dir) / ".hpctrain.lock").string();
  const std::string job = batch_job(), host = host_name();
  for (int attempt = 0; attempt < 10; ++attempt) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw bad_input(what + " '" + dir + "': cannot create its lock file (" + std::strerror(errno) + ")");
    kernel_ = use_flock;
    bool held = false;
    if (kernel_ && ::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno == EWOULDBLOCK)
        held = true;
      else
        kernel_ = false;  // ENOLCK, EOPNOTSUPP...: no flock here; the record and its heartbeat decide
    }
    struct stat open_st {
    }, path_st{};
    if (fstat(fd_, &open_st) != 0 || stat(path_.c_str(), &path_st) != 0 || open_st.st_ino != path_st.st_ino) {
      ::close(fd_);  // released (removed) meanwhile: open the new file
      fd_ = -1;
      continue;
    }
    auto record = read_record(fd_);
    const std::string refused = what + " " + dir + " is in use by " + holder_text(record) +
                                "; wait for it or use another [run] out_dir or [checkpoint] dir";
    if (held) {
      ::close(fd_);
      fd_ = -1;
      throw bad_input(refused);
    }
    if (!record["pid"].empty()) {  // an earlier run's record, not released
      if (!job.empty() && record["job"] == job) {
        note_ = "took over the lock of this job's earlier run (" + holder_text(record) + "): requeued";
      } else if (kernel_) {
        note_ = "took over the lock of a run that ended without releasing it (" + holder_text(record) + ")";
      } else {
        const bool gone = record["host"] == host && ::kill(std::atoi(record["pid"].c_str()), 0) != 0 && errno == ESRCH;
        const double age = static_cast<double>(std::time(nullptr) - path_st.st_mtime);
        if (!gone && age <= stale_s) {
          ::close(fd_);
          fd_ = -1;
          throw bad_input(
              refused + " (no flock on this file system: its heartbeat is " + std::to_string(static_cast<long>(age)) +
              " s old, taken over after [run] lock_stale_s = " + std::to_string(static_cast<long>(stale_s)) + ")");
        }
        note_ =
            "took over the lock of " + holder_text(record) +
            (gone ? ": that process is gone" : ": no heartbeat for " + std::to_string(static_cast<long>(age)) + " s");
      }
    }
    const std::string mine =
        "host=" + host + "\npid=" + std::to_string(getpid()) + "\njob=" + job + "\nsince=" + utc_now() + "\n";
    if (ftruncate(fd_, 0) != 0 || pwrite(fd_, mine.data(), mine.size(), 0) != static_cast<ssize_t>(mine.size()))
      throw bad_input(what + " '" + dir + "': cannot write its lock file " + path_ + " (" + std::strerror(errno) + ")");
    return;
  }
  throw Error(ExitCode::internal, Scope::this_rank, "the lock file " + path_ + " keeps being replaced");
}

DirectoryLock::~DirectoryLock() {
  if (fd_ < 0) return;
  struct stat open_st {
  }, path_st{};
  if (fstat(fd_, &open_st) == 0 && stat(path_.c_str(), &path_st) == 0 && open_st.st_ino == path_st.st_ino)
    ::unlink(path_.c_str());  // released: no file, no holder
  ::close(fd_);               // (drops the flock)
}

void DirectoryLock::heartbeat() {
  if (fd_ >= 0) futimens(fd_, nullptr);
}

int remove_partial_checkpoints(const std::string& dir) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string f = e.path().filename().string();
    if (f.rfind(".ckpt-", 0) == 0 && f.size() > 8 && f.substr(f.size() - 8) == ".partial" && fs::remove(e.path(), ec))
      ++n;
  }
  return n;
}

}  // namespace hpctrain
