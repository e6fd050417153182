// Node-local staging (data/staging.hpp).
#include "hpctrain/data/staging.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/log.hpp"

namespace fs = std::filesystem;

namespace hpctrain {

namespace {
constexpr std::int64_t kPiece = std::int64_t{64} << 20;
constexpr const char* kManifest = ".hpctrain-staged";

struct Entry {
  std::string rel;
  std::int64_t size = 0;
};

// "size path\n" per regular file under `root`, sorted: what is staged, and the manifest's text.
std::string list_text(const std::string& root) {
  std::vector<Entry> files;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file())
      files.push_back({fs::relative(e.path(), root).string(), static_cast<std::int64_t>(e.file_size())});
  std::sort(files.begin(), files.end(), [](const Entry& a, const Entry& b) { return a.rel < b.rel; });
  std::ostringstream os;
  for (const Entry& f : files) os << f.size << ' ' << f.rel << '\n';
  return os.str();
}

std::vector<Entry> parse(const std::string& text) {
  std::vector<Entry> out;
  std::istringstream is(text);
  for (Entry e; is >> e.size && is.get() == ' ' && std::getline(is, e.rel);) out.push_back(e);
  return out;
}

std::string mib(std::int64_t b) { return std::to_string((b + (1 << 19)) >> 20) + " MiB"; }

void bcast_text(std::string& s, int root, Communicator& c) {
  std::int64_t n = static_cast<std::int64_t>(s.size());
  c.broadcast(&n, 1, DType::i64, root);
  s.resize(static_cast<std::size_t>(n));
  if (n > 0) c.broadcast(s.data(), static_cast<std::size_t>(n), DType::u8, root);
}

// Every rank learns whether any rank has an error; the lowest such rank's message is thrown on
// all (one line).
void agree_or_throw(const std::string& error, Communicator& world) {
  std::int32_t first = error.empty() ? INT_MAX : world.rank();
  world.allreduce(&first, &first, 1, DType::i32, ReduceOp::min);
  if (first == INT_MAX) return;
  std::string message = error;
  bcast_text(message, first, world);
  throw bad_input(message);
}

// The dataset's folder name ("mnist-small" of "inputs/data/mnist-small/"): the copy's folder inside
// stage_dir, which is removed at the end (never stage_dir itself).
std::string folder_name(const std::string& path) {
  fs::path p = fs::path(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  const std::string name = p.filename().string();
  return name.empty() || name == "." || name == ".." ? "dataset" : name;
}

std::string expand_host(std::string dir, const std::string& host) {
  for (auto at = dir.find("%h"); at != std::string::npos; at = dir.find("%h", at + host.size()))
    dir.replace(at, 2, host);
  return dir;
}

// The copy among the nodes' first ranks (`leaders`): file i read by leader i % L and broadcast
// in pieces; every leader that needs a copy (`write`) writes it. Returns this leader's error ("":
// none); a read error is every leader's (the reader's message is broadcast with the piece).
std::string copy_files(const std::vector<Entry>& files, const std::string& from, const std::string& to, bool write,
                       Communicator& leaders, std::int64_t total, std::int64_t& written) {
  const int me = leaders.rank(), nodes = leaders.size();
  std::vector<char> buf(static_cast<std::size_t>(kPiece));
  std::string write_error;
  std::int64_t done = 0;
  const auto start = std::chrono::steady_clock::now();
  auto last = start;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const Entry& f = files[i];
    const int owner = static_cast<int>(i % static_cast<std::size_t>(nodes));
    std::ifstream in;
    if (me == owner) in.open(fs::path(from) / f.rel, std::ios::binary);
    const fs::path out_path = fs::path(to) / f.rel, tmp = out_path.string() + ".staging";
    std::ofstream out;
    bool writing = false;  // (after a write error: still in every broadcast, writing nothing)
    if (write && write_error.empty()) {
      std::error_code ec;
      fs::create_directories(out_path.parent_path(), ec);
      out.open(tmp, std::ios::binary | std::ios::trunc);
      writing = out.is_open();
      if (!writing) write_error = "[data] stage_dir: cannot write " + tmp.string();
    }
    for (std::int64_t at = 0; at < f.size || at == 0; at += kPiece) {
      const std::int64_t n = std::min(kPiece, f.size - at);
      std::string read_error;
      if (me == owner && n > 0 && !in.read(buf.data(), n))
        read_error = "[data] stage_dir: cannot read " + (fs::path(from) / f.rel).string() + " (" + std::to_string(at) +
                     " of " + std::to_string(f.size) + " bytes read; it changed while staging?)";
      bcast_text(read_error, owner, leaders);
      if (!read_error.empty()) return read_error;
      if (n > 0) leaders.broadcast(buf.data(), static_cast<std::size_t>(n), DType::u8, owner);
      if (writing && write_error.empty() && n > 0 && !out.write(buf.data(), n))
        write_error = "[data] stage_dir: cannot write " + tmp.string() + " (the disk full?)";
      done += std::max<std::int64_t>(n, 0);
      if (n <= 0) break;
    }
    if (writing) {
      out.close();
      std::error_code ec;
      if (write_error.empty() && (!out || (fs::rename(tmp, out_path, ec), ec)))
        write_error = "[data] stage_dir: cannot write " + out_path.string();
      written += f.size;
    }
    const auto now = std::chrono::steady_clock::now();
    if (me == 0 && (now - last > std::chrono::seconds(2) || i + 1 == files.size())) {
      const double s = std::chrono::duration<double>(now - start).count();
      char line[256];
      std::snprintf(line, sizeof line, "staging: %zu of %zu files, %s of %s to %s on %d node(s), %.0f MiB/s", i + 1,
                    files.size(), mib(done).c_str(), mib(total).c_str(), to.c_str(), nodes,
                    static_cast<double>(done) / 1048576.0 / std::max(s, 1e-9));
      log0(line);
      last = now;
    }
  }
  return write_error;
}
}  // namespace

StagedDataset::StagedDataset(const DataConfig& data, Communicator& world, Communicator* leaders,
                             const std::string& host)
    : path_(data.path) {
  if (data.stage_dir.empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  const int rank = world.rank();
  std::string text, error;
  if (rank == 0) try {
      if (!fs::is_directory(data.path))
        throw bad_input("[data] stage_dir: [data] path = " + data.path + " is not a directory");
      text = list_text(data.path);
      if (text.empty()) throw bad_input("[data] stage_dir: " + data.path + " holds no files to stage");
    } catch (const std::exception& e) {
      error = e.what();
    }
  agree_or_throw(error, world);
  bcast_text(text, 0, world);
  const std::vector<Entry> files = parse(text);
  for (const Entry& f : files) bytes_ += f.size;
  const bool leader = leaders != nullptr;
  const std::string dir = (fs::path(expand_host(data.stage_dir, host)) / folder_name(data.path)).string();
  path_ = dir;
  staged_ = true;
  bool have = false;  // a complete copy from before
  if (leader) try {
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (ec) throw bad_input("[data] stage_dir: cannot create " + dir + " on " + host + ": " + ec.message());
      std::ifstream m(fs::path(dir) / kManifest);
      std::stringstream held;
      held << m.rdbuf();
      have = m && held.str() == text;
      const std::int64_t free = static_cast<std::int64_t>(fs::space(dir).available);
      if (!have && free < bytes_)
        throw bad_input("[data] stage_dir = " + data.stage_dir + ": the dataset (" + mib(bytes_) +
                        ") does not fit in " + dir + " on " + host + " (" + mib(free) + " free)");
    } catch (const std::exception& e) {
      error = e.what();
      std::error_code ec;
      fs::remove(dir, ec);  // (only when empty: what was there stays)
    }
  agree_or_throw(error, world);
  if (leader) {
    std::int32_t needed = have ? 0 : 1;
    leaders->allreduce(&needed, &needed, 1, DType::i32, ReduceOp::max);
    if (needed) error = copy_files(files, data.path, dir, !have, *leaders, bytes_, copied_);
    if (error.empty() && !have) {  // the manifest last: a copy without it is incomplete
      std::ofstream m(fs::path(dir) / kManifest, std::ios::trunc);
      if (!(m << text)) error = "[data] stage_dir: cannot write " + (fs::path(dir) / kManifest).string();
    }
    if (!error.empty()) {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  }
  agree_or_throw(error, world);
  remove_ = leader;
  seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rank == 0) {
    char line[512];
    std::snprintf(line, sizeof line,
                  "staged %zu files (%s) from %s to %s on every node in %.2f s (%s copied here, %.0f MiB/s)",
                  files.size(), mib(bytes_).c_str(), data.path.c_str(), dir.c_str(), seconds_, mib(copied_).c_str(),
                  static_cast<double>(copied_) / 1048576.0 / std::max(seconds_, 1e-9));
    log0(line);
  }
}

StagedDataset::~StagedDataset() {
  if (!remove_) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace hpctrain
