// What one GPU reports about itself through NVML (the NVIDIA Management Library), for the run
// report's system figures. NVML is loaded at run time (dlopen), never linked: CPU builds and
// machines without an NVIDIA driver run unchanged, with telemetry unavailable.
#pragma once

#include <memory>
#include <optional>
#include <string>

namespace hpctrain {

// One reading. A figure the GPU does not report (NVML says "not supported") is empty.
struct GpuSample {
  std::optional<double> util_pct;       // time a kernel was running over NVML's last sample period
  std::optional<double> mem_used_mib;   // device memory in use (all processes)
  std::optional<double> mem_total_mib;  // device memory
  std::optional<double> power_w;        // board power draw now
  std::optional<double> temp_c;         // GPU die temperature
  std::optional<double> energy_j;       // since this GpuTelemetry was made (see energy_source())
};

class GpuTelemetry {
 public:
  static constexpr const char* kDefaultLibrary = "libnvidia-ml.so.1";

  // Opens `library`, initializes NVML and finds the GPU whose PCI bus id is `pci_bus_id`
  // ("00000000:3B:00.0", as CUDA reports it; NVML's own device index may differ from CUDA's).
  // Never throws for a missing library, driver or GPU: available() is false and why_not() says
  // what was missing. An empty `pci_bus_id` (a rank computing on the CPU) is "no GPU".
  explicit GpuTelemetry(const std::string& pci_bus_id, const std::string& library = kDefaultLibrary);
  ~GpuTelemetry();
  GpuTelemetry(const GpuTelemetry&) = delete;
  GpuTelemetry& operator=(const GpuTelemetry&) = delete;

  bool available() const { return nvml_ != nullptr; }
  const std::string& why_not() const { return why_not_; }
  // "counter" (the board's energy counter, Volta and newer) or "power" (power x time summed at
  // each sample, where the counter is not supported).
  const char* energy_source() const { return energy_counter_ ? "counter" : "power"; }

  // A reading now; `elapsed_s` (seconds since the previous sample, or since construction) is used
  // only where the energy is summed from power. Empty when unavailable.
  std::optional<GpuSample> sample(double elapsed_s);

 private:
  struct Nvml;  // the library's functions
  std::unique_ptr<Nvml> nvml_;
  void* device_ = nullptr;  // nvmlDevice_t
  std::string why_not_;
  bool energy_counter_ = false;
  double energy_start_mj_ = 0, energy_summed_j_ = 0;
};

}  // namespace hpctrain
