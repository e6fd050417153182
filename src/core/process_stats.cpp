// Process figures (core/process_stats.hpp).
#include "hpctrain/core/process_stats.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace hpctrain {

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return s(u.ru_utime) + s(u.ru_stime);
}

double resident_bytes() {
  std::ifstream in("/proc/self/statm");
  long long size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

double peak_resident_bytes() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return static_cast<double>(u.ru_maxrss) * 1024;  // Linux: KiB
}

namespace {
bool read_number(const std::string& path, double& out) {
  std::ifstream in(path);
  return static_cast<bool>(in >> out);
}
}  // namespace

PackageEnergy::PackageEnergy(std::string root) {
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(root, ec)) {
    const std::string n = e.path().filename().string();  // "intel-rapl:0" (a package), not "intel-rapl:0:1"
    if (n.rfind("intel-rapl:", 0) == 0 && n.find(':', 11) == std::string::npos) names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    Domain d;
    d.energy_file = root + "/" + n + "/energy_uj";
    if (read_number(d.energy_file, d.last_uj) && read_number(root + "/" + n + "/max_energy_range_uj", d.range_uj))
      domains_.push_back(d);
  }
}

double PackageEnergy::joules_since_last() {
  double uj = 0;
  for (Domain& d : domains_) {
    double now = 0;
    if (!read_number(d.energy_file, now)) continue;
    uj += now >= d.last_uj ? now - d.last_uj : now + d.range_uj - d.last_uj;  // wrapped around once
    d.last_uj = now;
  }
  return uj * 1e-6;
}

}  // namespace hpctrain
