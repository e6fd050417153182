// The checkpoint directory (io/checkpoint_file.hpp): checkpoint names, the newest complete one,
// publishing one (fsync, then the `latest` pointer, then the old ones beyond `keep` removed) and
// the free bytes of the directory's file system.
#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "hpctrain/core/error.hpp"
#include "hpctrain/io/checkpoint_file.hpp"

namespace fs = std::filesystem;

namespace hpctrain {

std::string checkpoint_file_name(std::int64_t step) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "ckpt-%08lld.h5", static_cast<long long>(step));
  return buf;
}

namespace {
bool parse_step(const std::string& name, std::int64_t& step) {  // "ckpt-<digits>.h5"
  if (name.size() < 9 || name.rfind("ckpt-", 0) != 0 || name.substr(name.size() - 3) != ".h5") return false;
  const std::string digits = name.substr(5, name.size() - 8);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return false;
  step = std::stoll(digits);
  return true;
}

void fsync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}
}  // namespace

std::vector<std::string> list_checkpoints(const std::string& dir) {
  std::vector<std::pair<std::int64_t, std::string>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::int64_t step = 0;
    const std::string name = e.path().filename().string();
    if (e.is_regular_file(ec) && parse_step(name, step)) found.emplace_back(step, name);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (const auto& f : found) out.push_back(f.second);
  return out;
}

std::string find_latest_checkpoint(const std::string& dir, std::string* warning) {
  const auto all = list_checkpoints(dir);
  const std::string newest = all.empty() ? "" : (fs::path(dir) / all.back()).string();
  const fs::path pointer_path = fs::path(dir) / "latest";
  std::error_code ec;
  if (!fs::exists(pointer_path, ec)) return newest;  // (before the first checkpoint, or removed by hand)
  std::ifstream pointer(pointer_path, std::ios::binary);
  std::string name;
  std::getline(pointer, name);
  // A checkpoint's name: printable, no directory part, ckpt-*.h5. Anything else is damage.
  const bool printable =
      !name.empty() && std::all_of(name.begin(), name.end(), [](char c) { return c > ' ' && c < 127 && c != '/'; });
  const bool named =
      printable && name.rfind("ckpt-", 0) == 0 && name.size() > 8 && name.compare(name.size() - 3, 3, ".h5") == 0;
  if (named && fs::exists(fs::path(dir) / name, ec)) return (fs::path(dir) / name).string();
  if (warning)
    *warning =
        pointer_path.string() +
        (named ? " names " + name + ", which does not exist" : std::string(" does not hold a checkpoint name")) +
        "; using " +
        (newest.empty() ? std::string("none (starting fresh)") : "the newest complete checkpoint by step, " + newest);
  return newest;
}

void publish_checkpoint(const std::string& dir, const std::string& name, int keep) {
  const fs::path d(dir);
  fsync_path((d / name).string(), false);
  fsync_path(dir, true);  // the rename into place is durable before `latest` names it
  {
    std::ofstream tmp(d / ".latest.tmp", std::ios::trunc);
    tmp << name << '\n';
    tmp.flush();
    if (!tmp) throw Error(ExitCode::internal, Scope::this_rank, "cannot write " + (d / ".latest.tmp").string());
  }
  fsync_path((d / ".latest.tmp").string(), false);
  fs::rename(d / ".latest.tmp", d / "latest");
  fsync_path(dir, true);
  auto all = list_checkpoints(dir);
  std::error_code ec;
  if (keep > 0 && static_cast<int>(all.size()) > keep)
    for (std::size_t i = 0; i + static_cast<std::size_t>(keep) < all.size(); ++i)
      if (all[i] != name) fs::remove(d / all[i], ec);
  // (Partial files of runs that died while writing are removed at start-up by the run holding
  // the directory's lock, io/run_lock.hpp: here they could be another run's write in progress.)
}

std::uint64_t free_bytes(const std::string& dir) {
  struct statvfs v {};
  if (statvfs(dir.c_str(), &v) != 0) return 0;
  return static_cast<std::uint64_t>(v.f_bavail) * static_cast<std::uint64_t>(v.f_frsize);
}

}  // namespace hpctrain
