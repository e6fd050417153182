// A stand-in for libnvidia-ml.so.1 with the functions hpctrain's GPU telemetry loads
// (core/gpu_telemetry.cpp), so the loading, reading, gathering and formatting are tested on
// machines without a GPU. Four GPUs, at PCI bus ids 00000000:0A:00.0 to 00000000:0D:00.0
// (GPU i at bus 0x0A + i), report fixed figures:
//   utilization 50 + 10 i %, memory used (i + 1) GiB of 80 GiB, temperature 40 + i C,
//   power 100 + 50 i W, except GPU 3: power not supported;
//   energy counter 5,000,000 mJ + (i + 1) x 1,000 mJ per reading, except GPU 2: not supported
//   (so hpctrain sums power over time for it).
#include <cstdio>
#include <cstring>

namespace {
constexpr int kSuccess = 0, kNotSupported = 3, kNotFound = 6, kUninitialized = 1;
struct FakeGpu {
  int index;
  unsigned long long energy_mj;
};
FakeGpu gpus[4] = {{0, 5000000}, {1, 5000000}, {2, 5000000}, {3, 5000000}};
int initialized = 0;
FakeGpu* gpu(void* device) { return static_cast<FakeGpu*>(device); }
}  // namespace

extern "C" {
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};

int nvmlInit_v2() {
  ++initialized;
  return kSuccess;
}
int nvmlShutdown() {
  if (initialized == 0) return kUninitialized;
  --initialized;
  return kSuccess;
}
const char* nvmlErrorString(int result) { return result == kNotFound ? "Not Found" : "Unknown Error"; }

int nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, void** device) {
  if (!initialized) return kUninitialized;
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (std::sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4 || domain != 0 || dev != 0 || bus < 0x0A ||
      bus > 0x0D)
    return kNotFound;
  *device = &gpus[bus - 0x0A];
  return kSuccess;
}
int nvmlDeviceGetUtilizationRates(void* device, nvmlUtilization_t* u) {
  u->gpu = 50 + 10 * static_cast<unsigned>(gpu(device)->index);
  u->memory = 5;
  return kSuccess;
}
int nvmlDeviceGetMemoryInfo(void* device, nvmlMemory_t* m) {
  m->total = 80ull << 30;
  m->used = static_cast<unsigned long long>(gpu(device)->index + 1) << 30;
  m->free = m->total - m->used;
  return kSuccess;
}
int nvmlDeviceGetPowerUsage(void* device, unsigned int* mw) {
  if (gpu(device)->index == 3) return kNotSupported;
  *mw = 1000 * (100 + 50 * static_cast<unsigned>(gpu(device)->index));
  return kSuccess;
}
int nvmlDeviceGetTemperature(void* device, int sensor, unsigned int* c) {
  if (sensor != 0) return kNotSupported;
  *c = 40 + static_cast<unsigned>(gpu(device)->index);
  return kSuccess;
}
int nvmlDeviceGetTotalEnergyConsumption(void* device, unsigned long long* mj) {
  FakeGpu* g = gpu(device);
  if (g->index == 2) return kNotSupported;
  g->energy_mj += 1000ull * static_cast<unsigned long long>(g->index + 1);
  *mj = g->energy_mj;
  return kSuccess;
}
}
