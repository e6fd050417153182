// What a process can measure about itself on Linux, for the run report's system figures.
#pragma once

#include <string>
#include <vector>

namespace hpctrain {

double process_cpu_seconds();  // user + system CPU time of this process so far (all threads)
double resident_bytes();       // resident memory now (/proc/self/statm), 0 where unreadable
double peak_resident_bytes();  // the process's resident high-water mark (getrusage ru_maxrss)

// The CPU packages' energy through Linux RAPL (powercap: <root>/intel-rapl:N/energy_uj, the
// package domains, summed), counted across the counters' wrap-around (max_energy_range_uj).
// Machines without it (no powercap, a VM, not readable without root) have none: available()
// is false and nothing fails.
class PackageEnergy {
 public:
  explicit PackageEnergy(std::string root = "/sys/class/powercap");
  bool available() const { return !domains_.empty(); }
  // Joules since the previous call (the first call: since construction); 0 when unavailable.
  double joules_since_last();

 private:
  struct Domain {
    std::string energy_file;
    double range_uj = 0, last_uj = 0;
  };
  std::vector<Domain> domains_;
};

}  // namespace hpctrain
