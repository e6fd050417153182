// Implementation of the collective watchdog (comm/watchdog.hpp).
#include "hpctrain/comm/watchdog.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <sstream>

#include "hpctrain/core/error.hpp"
#include "hpctrain/core/log.hpp"

namespace hpctrain {

namespace {
constexpr int kQueryTag = 7001;
constexpr int kReplyTag = 7002;
constexpr int kBeatTag = 7003;
constexpr char kBeat = 'b', kLastBeat = 'x';  // the payloads (sent from here): alive, and ending
constexpr int kMaxMessage = 4096;

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f s", s);
  return buf;
}

std::string describe(const InFlightOp& op) {
  return op.op + " #" + std::to_string(op.op_number) + " (collective #" + std::to_string(op.collective) + ")";
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}
// One line "<UTC time> rank R on HOST: <line>" appended to `path` (its folder made first) unless
// the file grew since `size_at_start` (-1: it did not exist): another rank of this host reported
// first. Called on the way to MPI_Abort: a failure is said on stderr and never thrown.
void append_report(const std::string& path, long long size_at_start, const std::string& line) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  char stamp[32] = {0};
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &utc);
  const std::string text = std::string(stamp) + " " + rank_and_host() + ": " + line + "\n";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  bool ok = fd >= 0 && ::flock(fd, LOCK_EX) == 0;
  struct stat st {};
  if (ok && ::fstat(fd, &st) == 0 && st.st_size <= std::max(size_at_start, 0LL))
    ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (fd >= 0) ::close(fd);  // (releases the lock)
  if (!ok)
    std::fprintf(stderr, "error [%s]: could not write the report to %s\n", rank_and_host().c_str(), path.c_str());
}

}  // namespace

std::string host_report_file(const std::string& out_dir) { return out_dir + "/reports/" + host_name() + ".txt"; }

long long report_file_size(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? -1 : static_cast<long long>(size);
}

std::string encode_state(const RankState& s) {
  std::ostringstream os;
  os << s.collectives_entered << '\n'
     << (s.in_collective ? 1 : 0) << '\n'
     << s.oldest.op << '\n'
     << s.oldest.op_number << '\n'
     << s.oldest.collective << '\n'
     << s.oldest_age << '\n'
     << s.elsewhere << '\n';
  return os.str();
}

RankState decode_state(const std::string& text, int world_rank) {
  RankState s;
  s.world_rank = world_rank;
  std::istringstream is(text);
  std::string line;
  auto next = [&]() { return std::getline(is, line) ? line : std::string(); };
  try {
    s.collectives_entered = std::stoull(next());
    s.in_collective = next() == "1";
    s.oldest.op = next();
    s.oldest.op_number = std::stoull(next());
    s.oldest.collective = std::stoull(next());
    s.oldest_age = std::stod(next());
    s.elsewhere = next();
    s.answered = true;
  } catch (const std::exception&) {
    s.answered = false;
  }
  return s;
}

std::string diagnose_timeout(const std::string& comm_name, const InFlightOp& stuck, double timeout_s, int me,
                             const std::vector<RankState>& states, int* reporter) {
  // Group the ranks stuck in a collective on this communicator by which one.
  std::map<std::tuple<std::uint64_t, std::string, std::uint64_t>, std::vector<int>> groups;
  for (const auto& s : states)
    if (s.answered && s.in_collective)
      groups[{s.oldest.collective, s.oldest.op, s.oldest.op_number}].push_back(s.world_rank);
  const std::vector<int>* best = nullptr;
  for (auto& [key, ranks] : groups) {
    std::sort(ranks.begin(), ranks.end());
    if (!best || ranks.size() > best->size() || (ranks.size() == best->size() && ranks.front() < best->front()))
      best = &ranks;
  }
  *reporter = best ? best->front() : me;

  std::vector<int> arrived;
  std::string missing;
  for (const auto& s : states) {
    const bool here = s.answered && s.in_collective && s.oldest.collective == stuck.collective &&
                      s.oldest.op == stuck.op && s.oldest.op_number == stuck.op_number;
    if (here) {
      arrived.push_back(s.world_rank);
      continue;
    }
    std::string where;
    if (!s.answered)
      where = "no answer from its watchdog";
    else if (s.in_collective)
      where = "in " + describe(s.oldest) + " for " + seconds(s.oldest_age);
    else if (!s.elsewhere.empty())
      where = "not in a collective on '" + comm_name + "'; busy in " + s.elsewhere;
    else
      where = "not in a collective on '" + comm_name + "' (entered " + std::to_string(s.collectives_entered) +
              " collectives so far)";
    missing += std::string(missing.empty() ? "" : "; ") + "rank " + std::to_string(s.world_rank) + " (" + where + ")";
  }
  std::sort(arrived.begin(), arrived.end());
  return "collective timeout: " + describe(stuck) + " on communicator '" + comm_name + "' (" +
         std::to_string(states.size()) + " ranks) did not complete within " + seconds(timeout_s) +
         "; ranks that did not arrive: " + (missing.empty() ? "none (all arrived; a transport stalled)" : missing) +
         "; arrived: " + (arrived.empty() ? "none" : rank_list(arrived)) + ". Aborting the job with exit code 3.";
}

std::string describe_lost_contact(int neighbour, double silent_s, double beat_s, const std::string& doing) {
  return "lost contact: no heartbeat from rank " + std::to_string(neighbour) + "'s watchdog for " + seconds(silent_s) +
         " (one is sent every " + seconds(beat_s) + "; its host is down or cut off from this one); this rank is " +
         doing + ". Aborting the job with exit code 3.";
}

Watchdog::Watchdog(MPI_Comm world, double timeout_s, std::string report_file)
    : comm_(MpiComm::dup(world)), timeout_s_(timeout_s), report_file_(std::move(report_file)) {
  rank_ = comm_.rank();
  grace_s_ = std::clamp(timeout_s_ / 2, 1.0, 5.0);
  beat_s_ = std::clamp(timeout_s_ / 4, 0.5, 5.0);
  const int size = comm_.size();
  for (const int n : {(rank_ + size - 1) % size, (rank_ + 1) % size})
    if (n != rank_ && std::find(neighbours_.begin(), neighbours_.end(), n) == neighbours_.end())
      neighbours_.push_back(n);
  last_heard_.assign(neighbours_.size(), CollectiveLog::clock());
  finished_.assign(neighbours_.size(), false);
  if (!report_file_.empty()) report_size_at_start_ = report_file_size(report_file_);
  thread_ = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  // (A rank that leaves with an error waits up to 2 s here before its MPI_Abort.)
  if (timeout_s_ > 0 && !part_from_neighbours()) comm_.release();  // left allocated: see release()
}

void Watchdog::send_to_neighbours(const char* payload) {
  for (const int n : neighbours_) {
    MPI_Request r = MPI_REQUEST_NULL;
    // (never waited for: a lost neighbour's would never complete; `payload` is a constant)
    if (MPI_Isend(payload, 1, MPI_CHAR, n, kBeatTag, comm_.get(), &r) == MPI_SUCCESS) MPI_Request_free(&r);
  }
}

void Watchdog::receive_beats(double now) {
  for (;;) {
    int flag = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kBeatTag, comm_.get(), &flag, &status) != MPI_SUCCESS || !flag) return;
    char what = 0;
    MPI_Recv(&what, 1, MPI_CHAR, status.MPI_SOURCE, kBeatTag, comm_.get(), MPI_STATUS_IGNORE);
    const auto it = std::find(neighbours_.begin(), neighbours_.end(), status.MPI_SOURCE);
    if (it == neighbours_.end()) continue;
    const auto i = static_cast<std::size_t>(it - neighbours_.begin());
    last_heard_[i] = now;
    if (what == kLastBeat) finished_[i] = true;
  }
}

int Watchdog::silent_neighbour(double now, double limit) const {
  for (std::size_t i = 0; i < neighbours_.size(); ++i)
    if (!finished_[i] && now - last_heard_[i] > limit) return static_cast<int>(i);
  return -1;
}

bool Watchdog::part_from_neighbours() {
  send_to_neighbours(&kLastBeat);
  const double deadline = CollectiveLog::clock() + 2.0;
  for (;;) {
    receive_beats(CollectiveLog::clock());
    if (std::all_of(finished_.begin(), finished_.end(), [](bool f) { return f; })) return true;
    if (CollectiveLog::clock() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void Watchdog::attach(const CollectiveLog* log) {
  std::lock_guard<std::mutex> lock(mu_);
  logs_.push_back(log);
}

void Watchdog::detach(const CollectiveLog* log) {
  std::lock_guard<std::mutex> lock(mu_);
  logs_.erase(std::remove(logs_.begin(), logs_.end(), log), logs_.end());
}

RankState Watchdog::state_of(const std::string& comm_name) const {
  RankState s;
  s.world_rank = rank_;
  s.answered = true;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto* log : logs_) {
    const auto snap = log->snapshot();
    const auto it = std::find_if(snap.in_flight.begin(), snap.in_flight.end(),
                                 [](const InFlightOp& op) { return op.collective > 0; });
    if (log->name() == comm_name) {
      s.collectives_entered = snap.collectives_entered;
      if (it != snap.in_flight.end()) {
        s.in_collective = true;
        s.oldest = *it;
        s.oldest_age = snap.now - it->started;
      }
    } else if (it != snap.in_flight.end() && s.elsewhere.empty()) {
      s.elsewhere = describe(*it) + " on '" + log->name() + "' for " + seconds(snap.now - it->started);
    }
  }
  return s;
}

std::string Watchdog::activity() const {
  // (no communicator is named "": `elsewhere` is then the first collective in flight on any)
  const std::string busy = state_of({}).elsewhere;
  return busy.empty() ? "in no collective" : "in " + busy;
}

void Watchdog::answer_queries() {
  for (;;) {
    int flag = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kQueryTag, comm_.get(), &flag, &status) != MPI_SUCCESS || !flag) return;
    int len = 0;
    MPI_Get_count(&status, MPI_CHAR, &len);
    std::string name(static_cast<std::size_t>(std::max(len, 0)), '\0');
    MPI_Recv(name.data(), len, MPI_CHAR, status.MPI_SOURCE, kQueryTag, comm_.get(), MPI_STATUS_IGNORE);
    const std::string reply = encode_state(state_of(name));
    MPI_Send(reply.data(), static_cast<int>(reply.size()), MPI_CHAR, status.MPI_SOURCE, kReplyTag, comm_.get());
  }
}

void Watchdog::loop() {
  const auto tick = std::chrono::milliseconds(20);
  while (!stop_) {
    answer_queries();
    if (timeout_s_ > 0) {
      // Copy what a timeout needs while the logs cannot be detached under us.
      bool timed_out = false;
      std::string name;
      std::vector<int> members;
      InFlightOp stuck;
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (const auto* log : logs_) {
          log->poll();
          const auto snap = log->snapshot();
          if (!snap.in_flight.empty() && snap.now - snap.in_flight.front().started > timeout_s_) {
            timed_out = true;
            name = log->name();
            members = log->world_ranks();
            stuck = snap.in_flight.front();
            break;
          }
        }
      }
      if (timed_out) handle_timeout(name, members, stuck);  // does not return
      const double now = CollectiveLog::clock();
      if (now >= next_beat_) {
        send_to_neighbours(&kBeat);
        next_beat_ = now + beat_s_;
      }
      receive_beats(now);
      const int lost = silent_neighbour(now, timeout_s_ + 2 * grace_s_);
      if (lost >= 0)
        report_and_abort(describe_lost_contact(neighbours_[static_cast<std::size_t>(lost)],
                                               now - last_heard_[static_cast<std::size_t>(lost)], beat_s_, activity()));
    }
    std::this_thread::sleep_for(tick);
  }
}

void Watchdog::handle_timeout(const std::string& name, const std::vector<int>& members, const InFlightOp& stuck) {
  std::vector<std::string> buffers(members.size(), std::string(kMaxMessage, '\0'));
  std::vector<MPI_Request> recvs(members.size(), MPI_REQUEST_NULL), sends(members.size(), MPI_REQUEST_NULL);
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (members[i] == rank_) continue;
    MPI_Irecv(buffers[i].data(), kMaxMessage, MPI_CHAR, members[i], kReplyTag, comm_.get(), &recvs[i]);
    MPI_Isend(name.data(), static_cast<int>(name.size()), MPI_CHAR, members[i], kQueryTag, comm_.get(), &sends[i]);
  }
  std::vector<RankState> states(members.size());
  std::vector<bool> got(members.size(), false);
  const double deadline = CollectiveLog::clock() + grace_s_;
  for (;;) {
    answer_queries();  // the others are asking us at the same time
    bool all = true;
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (members[i] == rank_ || got[i]) continue;
      int flag = 0;
      MPI_Status st;
      MPI_Test(&recvs[i], &flag, &st);
      if (flag) {
        int len = 0;
        MPI_Get_count(&st, MPI_CHAR, &len);
        states[i] = decode_state(buffers[i].substr(0, static_cast<std::size_t>(len)), members[i]);
        got[i] = true;
      } else {
        all = false;
      }
    }
    if (all || CollectiveLog::clock() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (members[i] == rank_)
      states[i] = state_of(name);
    else if (!got[i])
      states[i].world_rank = members[i];  // answered = false
  }
  int reporter = rank_;
  const std::string line = diagnose_timeout(name, stuck, timeout_s_, rank_, states, &reporter);
  if (reporter == rank_) report_and_abort(line);
  // Another rank reports; if the job is still alive after a grace period, report ourselves.
  const double fallback = CollectiveLog::clock() + 2 * grace_s_;
  while (CollectiveLog::clock() < fallback) {
    answer_queries();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  report_and_abort(line);
}

void report_timeout_and_abort(const std::string& line, const std::string& report_file, long long size_at_start) {
  log_error(line);
  if (!report_file.empty()) append_report(report_file, size_at_start, line);
  MPI_Abort(MPI_COMM_WORLD, static_cast<int>(ExitCode::collective_timeout));
  std::_Exit(static_cast<int>(ExitCode::collective_timeout));  // MPI_Abort does not return
}

}  // namespace hpctrain
