// GPU telemetry through NVML loaded at run time (core/gpu_telemetry.hpp). The few NVML types
// used are declared here as the library's C interface defines them (nvml.h is not needed to
// build, so the CPU build has no NVIDIA dependency).
#include "hpctrain/core/gpu_telemetry.hpp"

#include <dlfcn.h>

#include <type_traits>

namespace hpctrain {

namespace {
using nvmlReturn_t = int;  // NVML_SUCCESS = 0
using nvmlDevice_t = void*;
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
constexpr int kTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU
constexpr double kMiB = 1024.0 * 1024.0;
}  // namespace

struct GpuTelemetry::Nvml {
  void* lib = nullptr;
  bool initialized = false;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*by_pci_bus_id)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*energy)(nvmlDevice_t, unsigned long long*) = nullptr;

  ~Nvml() {
    if (initialized) shutdown();
    if (lib) dlclose(lib);
  }
  // Resolves every function; returns the first missing symbol's name ("" when all are there).
  std::string resolve() {
    std::string missing;
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn && missing.empty()) missing = name;
    };
    get(init, "nvmlInit_v2");
    get(shutdown, "nvmlShutdown");
    get(error_string, "nvmlErrorString");
    get(by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2");
    get(utilization, "nvmlDeviceGetUtilizationRates");
    get(memory, "nvmlDeviceGetMemoryInfo");
    get(power, "nvmlDeviceGetPowerUsage");
    get(temperature, "nvmlDeviceGetTemperature");
    get(energy, "nvmlDeviceGetTotalEnergyConsumption");
    return missing;
  }
  std::string error(nvmlReturn_t r) const { return error_string ? error_string(r) : "error " + std::to_string(r); }
};

GpuTelemetry::GpuTelemetry(const std::string& pci_bus_id, const std::string& library) {
  if (pci_bus_id.empty()) {
    why_not_ = "no GPU on this rank";
    return;
  }
  auto nvml = std::make_unique<Nvml>();
  nvml->lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!nvml->lib) {
    const char* e = dlerror();
    why_not_ = "cannot load " + library + (e ? std::string(": ") + e : "");
    return;
  }
  if (const std::string missing = nvml->resolve(); !missing.empty()) {
    why_not_ = library + " has no " + missing;
    return;
  }
  if (const nvmlReturn_t r = nvml->init(); r != 0) {
    why_not_ = "nvmlInit: " + nvml->error(r);
    return;
  }
  nvml->initialized = true;
  if (const nvmlReturn_t r = nvml->by_pci_bus_id(pci_bus_id.c_str(), &device_); r != 0) {
    why_not_ = "NVML finds no GPU with PCI bus id " + pci_bus_id + ": " + nvml->error(r);
    return;
  }
  unsigned long long mj = 0;
  energy_counter_ = nvml->energy(device_, &mj) == 0;
  energy_start_mj_ = static_cast<double>(mj);
  nvml_ = std::move(nvml);
}

GpuTelemetry::~GpuTelemetry() = default;

std::optional<GpuSample> GpuTelemetry::sample(double elapsed_s) {
  if (!nvml_) return std::nullopt;
  GpuSample s;
  nvmlUtilization_t u{};
  if (nvml_->utilization(device_, &u) == 0) s.util_pct = u.gpu;
  nvmlMemory_t m{};
  if (nvml_->memory(device_, &m) == 0) {
    s.mem_used_mib = static_cast<double>(m.used) / kMiB;
    s.mem_total_mib = static_cast<double>(m.total) / kMiB;
  }
  unsigned int mw = 0, celsius = 0;
  if (nvml_->power(device_, &mw) == 0) s.power_w = mw * 1e-3;
  if (nvml_->temperature(device_, kTemperatureGpu, &celsius) == 0) s.temp_c = celsius;
  unsigned long long mj = 0;
  if (energy_counter_) {
    if (nvml_->energy(device_, &mj) == 0) s.energy_j = (static_cast<double>(mj) - energy_start_mj_) * 1e-3;
  } else if (s.power_w) {
    energy_summed_j_ += *s.power_w * elapsed_s;  // the power now, held over the interval
    s.energy_j = energy_summed_j_;
  }
  return s;
}

}  // namespace hpctrain
