// A folder replaced as a whole (io/staged_folder.hpp).
#include "hpctrain/io/staged_folder.hpp"

#include <fcntl.h>     // AT_FDCWD
#include <sys/file.h>  // flock
#include <sys/stat.h>  // statx (glibc 2.28)
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>  // renameat2, RENAME_EXCHANGE (glibc 2.28, _GNU_SOURCE)
#include <cstring>
#include <filesystem>
#include <vector>

#include "hpctrain/core/error.hpp"
#include "hpctrain/core/log.hpp"

namespace fs = std::filesystem;

namespace hpctrain {

namespace {
// The folder `dir` names (a link followed), absolute; checked: a folder or nothing, and not one
// the process works in.
fs::path target_of(const std::string& dir, const std::string& what) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  std::error_code ec;
  fs::path p = fs::absolute(d, ec).lexically_normal();
  const fs::file_status s = fs::status(p, ec);
  if (fs::exists(s)) {
    if (!fs::is_directory(s)) throw bad_input(what + ": " + dir + " is not a folder");
    const fs::path real = fs::canonical(p, ec);  // (a link followed)
    if (!ec) p = real;
  } else if (fs::is_symlink(fs::symlink_status(p, ec))) {
    throw bad_input(what + ": " + dir + " is a link to nothing");
  }
  const fs::path rel = fs::current_path(ec).lexically_relative(p);
  if (p == p.root_path() || (!rel.empty() && *rel.begin() != ".."))
    throw bad_input(what + ": " + dir + " is the current folder or holds it; the export replaces the folder " +
                    "as a whole: name a folder beside it or below it");
  return p;
}

// Not kept from the old folder: what `stale` claims, and a killed writer's unfinished "*.partial" files.
bool dropped(const std::string& name, const std::function<bool(const std::string&)>& stale) {
  const std::string partial = ".partial";
  return stale(name) ||
         (name.size() > partial.size() && name.compare(name.size() - partial.size(), partial.size(), partial) == 0);
}

void check(const std::error_code& ec, const std::string& what, const std::string& step) {
  if (ec) throw bad_input(what + ": cannot " + step + " (" + ec.message() + ")");
}

// What a call stopped by a kill left: "<dir>.old" without the folder is put back, then both removed.
void clean_leftovers(const fs::path& target, const fs::path& staging, const fs::path& old, const std::string& what) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(target, ec)) && fs::is_directory(fs::symlink_status(old, ec))) {
    fs::rename(old, target, ec);
    check(ec, what, "put " + old.string() + " back as " + target.string());
    log0("warning: " + what + ": " + old.string() + " (an export stopped between its two renames) put back as " +
         target.string());
  }
  fs::remove_all(staging, ec);
  check(ec, what, "remove " + staging.string() + " (an earlier export's)");
  fs::remove_all(old, ec);
  check(ec, what, "remove " + old.string() + " (an earlier export's)");
}

// The old folder's entries the new one lacks and `stale` does not claim, hard-linked (else copied).
void carry_entries(const fs::path& from, const fs::path& to, const std::function<bool(const std::string&)>& stale,
                   const std::string& what) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(from)) {
    const std::string name = e.path().filename().string();
    const fs::path dest = to / name;
    if (dropped(name, stale) || fs::exists(fs::symlink_status(dest, ec))) continue;
    const auto as = fs::copy_options::recursive | fs::copy_options::copy_symlinks;
    fs::copy(e.path(), dest, as | fs::copy_options::create_hard_links, ec);
    if (ec) {  // (a file system without hard links)
      fs::remove_all(dest, ec);
      fs::copy(e.path(), dest, as, ec);
    }
    check(ec, what, "carry " + e.path().string() + " into " + to.string());
  }
  fs::permissions(to, fs::status(from).permissions(), ec);
  check(ec, what, "give " + to.string() + " the permissions of " + from.string());
}

// The root of a mount (statx's STATX_ATTR_MOUNT_ROOT; before Linux 5.8, another device than its parent's).
bool mount_point(const fs::path& p) {
  struct statx sx {};
  if (statx(AT_FDCWD, p.c_str(), 0, STATX_BASIC_STATS, &sx) == 0 && (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
    return (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
  struct stat here = {}, parent = {};
  return ::stat(p.c_str(), &here) == 0 && ::stat(p.parent_path().c_str(), &parent) == 0 && here.st_dev != parent.st_dev;
}

// FolderSwap::file_by_file: the staged files renamed into `target` (config.json and the index last,
// as a loader reads them first), then the stale files the new ones do not replace removed.
void files_into_place(const fs::path& staging, const fs::path& target,
                      const std::function<bool(const std::string&)>& stale, const std::string& what) {
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(staging)) names.push_back(e.path().filename().string());
  const auto rank = [](const std::string& n) { return n == "config.json" ? 2 : n.find(".index.") != n.npos ? 1 : 0; };
  std::sort(names.begin(), names.end(),
            [&](const std::string& a, const std::string& b) { return rank(a) != rank(b) ? rank(a) < rank(b) : a < b; });
  std::error_code ec;
  for (const std::string& n : names) {
    fs::rename(staging / n, target / n, ec);
    check(ec, what, "rename " + (staging / n).string() + " to " + (target / n).string());
  }
  fs::remove(staging, ec);
  check(ec, what, "remove " + staging.string());
  std::vector<fs::path> gone;  // (listed first, removed after)
  for (const fs::directory_entry& e : fs::directory_iterator(target)) {
    const std::string n = e.path().filename().string();
    if (dropped(n, stale) && std::find(names.begin(), names.end(), n) == names.end()) gone.push_back(e.path());
  }
  for (const fs::path& g : gone) {
    fs::remove_all(g, ec);
    check(ec, what, "remove " + g.string());
  }
}

// The complete staging folder takes the place of `target`.
void swap_in(const fs::path& staging, const fs::path& target, const fs::path& old, FolderSwap how,
             const std::string& what) {
  std::error_code ec;
  if (how == FolderSwap::exchange) {
    if (renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
      fs::remove_all(staging, ec);  // (the old folder now; the next call removes it if this fails)
      return;
    }
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
      throw bad_input(what + ": cannot exchange " + staging.string() + " and " + target.string() + " (" +
                      std::strerror(errno) + ")");
  }
  fs::rename(target, old, ec);
  check(ec, what, "rename " + target.string() + " to " + old.string());
  fs::rename(staging, target, ec);
  if (ec) {
    std::error_code back;
    fs::rename(old, target, back);
    check(ec, what, "rename " + staging.string() + " to " + target.string());
  }
  fs::remove_all(old, ec);  // (the next call removes it if this fails)
}

// The empty folder the new files are written to: "<dir>.partial" beside `target`, or
// "<dir>/.hpctrain.partial" (`how` becomes file_by_file) for a mount point, for a folder whose
// parent this process may not write in (a project folder in an administrator's), and when asked.
fs::path staging_folder(const fs::path& target, FolderSwap& how, const std::string& what) {
  std::error_code ec;
  const bool exists = fs::is_directory(target, ec);
  if (exists && mount_point(target)) how = FolderSwap::file_by_file;
  if (how != FolderSwap::file_by_file || !exists) {
    const fs::path beside = target.string() + ".partial";
    clean_leftovers(target, beside, fs::path(target.string() + ".old"), what);
    fs::create_directories(beside, ec);
    if (!ec) return beside;
    const bool refused = ec == std::errc::permission_denied || ec == std::errc::operation_not_permitted ||
                         ec == std::errc::read_only_file_system;
    if (!exists || !refused) check(ec, what, "create " + beside.string());
    log0("warning: " + what + ": cannot create " + beside.string() + " (" + ec.message() +
         "): the files are replaced one by one inside " + target.string());
    how = FolderSwap::file_by_file;
  }
  const fs::path inside = target / ".hpctrain.partial";
  fs::remove_all(inside, ec);
  check(ec, what, "remove " + inside.string() + " (an earlier export's)");
  fs::create_directory(inside, ec);
  check(ec, what, "create " + inside.string());
  return inside;
}

// Exports into the same folder, one at a time: an exclusive flock on the folder's parent (which
// stays put while the folder is exchanged), held while this lives. Where the file system has no
// flock (ENOLCK, EOPNOTSUPP), none.
class ParentLock {
 public:
  explicit ParentLock(const fs::path& target) : fd_(::open(target.parent_path().c_str(), O_RDONLY | O_DIRECTORY)) {
    if (fd_ >= 0)
      while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
      }
  }
  ~ParentLock() {
    if (fd_ >= 0) ::close(fd_);  // (drops the flock)
  }
  ParentLock(const ParentLock&) = delete;
  ParentLock& operator=(const ParentLock&) = delete;

 private:
  int fd_;
};
}  // namespace

namespace {
// `message` with the staging folder's path replaced by the folder's.
std::string named_as(std::string message, const fs::path& staging, const fs::path& target) {
  const std::string from = staging.string() + "/", to = target.string() + "/";
  for (std::size_t at = message.find(from); at != std::string::npos; at = message.find(from, at + to.size()))
    message.replace(at, from.size(), to);
  return message;
}
}  // namespace

void replace_folder(const std::string& dir, const std::string& what,
                    const std::function<void(const std::string& staging)>& write,
                    const std::function<bool(const std::string& name)>& stale, FolderSwap how) {
  const fs::path target = target_of(dir, what);
  const ParentLock one_at_a_time(target);
  const fs::path staging = staging_folder(target, how, what);
  std::error_code ec;
  try {
    try {
      write(staging.string());
    } catch (const Error& e) {  // (names the file the user asked for, not the staging copy removed below)
      throw Error(e.code(), e.scope(), named_as(e.what(), staging, target) + "; " + target.string() + " is as it was");
    }
    try {
      if (staging.parent_path() == target) {  // (file by file)
        files_into_place(staging, target, stale, what);
        return;
      }
      if (!fs::is_directory(target)) {
        fs::rename(staging, target);
        return;
      }
      carry_entries(target, staging, stale, what);
    } catch (const fs::filesystem_error& e) {
      throw bad_input(what + ": " + e.what());
    }
    swap_in(staging, target, fs::path(target.string() + ".old"), how, what);
  } catch (...) {
    fs::remove_all(staging, ec);  // (the new folder, or the old one after a failed exchange's second half)
    throw;
  }
}

}  // namespace hpctrain
