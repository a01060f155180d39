// Simulated libnvidia-ml.so.1: the NVML subset commbench reads for GPU metadata and telemetry. There is
// no nvml.h in the CUDA toolkit, so the few ABI types are declared here with NVML's values. NVML sees
// every physical device (it ignores CUDA_VISIBLE_DEVICES, like the real one).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../common/knobs.hpp"

namespace {

using nvmlReturn_t = int;
constexpr nvmlReturn_t NVML_SUCCESS = 0, NVML_ERROR_UNINITIALIZED = 1, NVML_ERROR_INVALID_ARGUMENT = 2,
                       NVML_ERROR_NOT_SUPPORTED = 3, NVML_ERROR_NOT_FOUND = 6, NVML_ERROR_INSUFFICIENT_SIZE = 7;
constexpr int NVML_TOPOLOGY_INTERNAL = 0, NVML_TOPOLOGY_NODE = 40;
constexpr int NVML_TEMPERATURE_GPU = 0;

struct nvmlPciInfo_t {  // the _v3 layout
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};

struct SimDevice {
  int physical;
};

std::atomic<int> g_init{0};

int device_count() {
  static const int n = static_cast<int>(simgpu::env_int("SIMGPU_DEVICE_COUNT", 8));
  return n < 0 ? 0 : n;
}

SimDevice* device(int physical) {
  static SimDevice* table = [] {
    auto* t = new SimDevice[64];
    for (int i = 0; i < 64; ++i) t[i].physical = i;
    return t;
  }();
  return (physical >= 0 && physical < device_count() && physical < 64) ? &table[physical] : nullptr;
}

bool valid(void* d) {
  for (int i = 0; i < device_count() && i < 64; ++i)
    if (d == device(i)) return true;
  return false;
}

nvmlReturn_t copy_string(const std::string& s, char* out, unsigned len) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (len < s.size() + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, s.c_str(), s.size() + 1);
  return NVML_SUCCESS;
}

// Slowly varying, plausible readings (never measurements of anything).
double wobble(int physical, double period_s) {
  using namespace std::chrono;
  const double t = duration<double>(steady_clock::now().time_since_epoch()).count();
  const double phase = (t / period_s) - static_cast<long long>(t / period_s);
  return (phase < 0.5 ? phase : 1 - phase) * 2 + physical * 0.1;  // 0..1(+)
}

// Fixed readings for tests (tests/simgpu/README.md): SIMGPU_NVML_<NAME> when set, else `def`.
double knob(const char* name, double def) {
  const char* v = simgpu::env(name);
  if (v == nullptr) return def;
  char* end = nullptr;
  const double x = std::strtod(v, &end);
  return end == v ? def : x;
}

// Seconds since the first nvmlInit: SIMGPU_NVML_TEMPERATURE_RISE_PER_S warms the devices over
// time (the thermal warm-up's test reaches its target this way).
double seconds_since_init() {
  using namespace std::chrono;
  static const steady_clock::time_point start = steady_clock::now();
  return duration<double>(steady_clock::now() - start).count();
}

}  // namespace

#define NVML_API extern "C" __attribute__((visibility("default")))
#define NEED_INIT() \
  if (g_init.load() <= 0) return NVML_ERROR_UNINITIALIZED
#define NEED_DEVICE(d)  \
  NEED_INIT();          \
  if (!valid(d)) return NVML_ERROR_INVALID_ARGUMENT
#define PHYS(d) (static_cast<SimDevice*>(d)->physical)

NVML_API nvmlReturn_t nvmlInit_v2() {
  ++g_init;
  (void)seconds_since_init();
  return NVML_SUCCESS;
}
NVML_API nvmlReturn_t nvmlInit() { return nvmlInit_v2(); }

NVML_API nvmlReturn_t nvmlShutdown() {
  if (g_init.load() <= 0) return NVML_ERROR_UNINITIALIZED;
  --g_init;
  return NVML_SUCCESS;
}

NVML_API const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    default: return "Unknown Error";
  }
}

NVML_API nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  NEED_INIT();
  return copy_string("580.00.00 (commbench simulated)", version, length);
}

NVML_API nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* v) {
  NEED_INIT();
  if (v == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *v = 13000;
  return NVML_SUCCESS;
}
NVML_API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* v) { return nvmlSystemGetCudaDriverVersion(v); }

NVML_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  NEED_INIT();
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = static_cast<unsigned>(device_count());
  return NVML_SUCCESS;
}
NVML_API nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) { return nvmlDeviceGetCount_v2(count); }

NVML_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device_out) {
  NEED_INIT();
  if (device_out == nullptr || device(static_cast<int>(index)) == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *device_out = device(static_cast<int>(index));
  return NVML_SUCCESS;
}
NVML_API nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, void** d) { return nvmlDeviceGetHandleByIndex_v2(index, d); }

// Accepts "0000:12:00.0" (CUDA's form) and "00000000:12:00.0" (NVML's).
NVML_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, void** device_out) {
  NEED_INIT();
  if (bus_id == nullptr || device_out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned dom = 0, bus = 0, dev = 0, fn = 0;
  if (std::sscanf(bus_id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) return NVML_ERROR_INVALID_ARGUMENT;
  SimDevice* d = (dom == 0 && dev == 0 && fn == 0 && bus >= 0x10) ? device(static_cast<int>(bus - 0x10)) : nullptr;
  if (d == nullptr) return NVML_ERROR_NOT_FOUND;
  *device_out = d;
  return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetName(void* d, char* name, unsigned int length) {
  NEED_DEVICE(d);
  return copy_string("commbench simulated GPU (not a real device)", name, length);
}

NVML_API nvmlReturn_t nvmlDeviceGetUUID(void* d, char* uuid, unsigned int length) {
  NEED_DEVICE(d);
  char buf[64];
  std::snprintf(buf, sizeof buf, "GPU-516d3000-0000-4000-8000-0000000000%02x", PHYS(d));  // matches cudaDeviceProp.uuid
  return copy_string(buf, uuid, length);
}

NVML_API nvmlReturn_t nvmlDeviceGetPciInfo_v3(void* d, nvmlPciInfo_t* pci) {
  NEED_DEVICE(d);
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::memset(pci, 0, sizeof *pci);
  pci->domain = 0;
  pci->bus = 0x10 + static_cast<unsigned>(PHYS(d));
  pci->device = 0;
  pci->pciDeviceId = 0x000010de;  // vendor NVIDIA, device id 0: not a real product
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02X:00.0", pci->bus);
  std::snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", pci->bus);
  return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetTemperature(void* d, int sensor, unsigned int* temp) {
  NEED_DEVICE(d);
  if (temp == nullptr || sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  const double base = knob("SIMGPU_NVML_TEMPERATURE", 38 + static_cast<unsigned>(4 * wobble(PHYS(d), 60)));
  *temp = static_cast<unsigned>(base + knob("SIMGPU_NVML_TEMPERATURE_RISE_PER_S", 0) * seconds_since_init());
  return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetPowerUsage(void* d, unsigned int* milliwatts) {
  NEED_DEVICE(d);
  if (milliwatts == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *milliwatts = static_cast<unsigned>(1000 * knob("SIMGPU_NVML_POWER_W", 95 + 10 * wobble(PHYS(d), 20)));
  return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetClockInfo(void* d, int type, unsigned int* mhz) {
  NEED_DEVICE(d);
  if (mhz == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  switch (type) {
    case 0: case 1: *mhz = static_cast<unsigned>(knob("SIMGPU_NVML_SM_CLOCK", 1980)); return NVML_SUCCESS;  // graphics, SM
    case 2: *mhz = static_cast<unsigned>(knob("SIMGPU_NVML_MEMORY_CLOCK", 2619)); return NVML_SUCCESS;      // memory
    case 3: *mhz = 1755; return NVML_SUCCESS;          // video
    default: return NVML_ERROR_INVALID_ARGUMENT;
  }
}

NVML_API nvmlReturn_t nvmlDeviceGetMemoryInfo(void* d, nvmlMemory_t* mem) {
  NEED_DEVICE(d);
  if (mem == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  mem->total = simgpu::parse_bytes(simgpu::env("SIMGPU_DEVICE_MEMORY"), 4ULL << 30);
  mem->used = 0;  // other processes' simulated allocations are not visible here
  mem->free = mem->total;
  return NVML_SUCCESS;
}

// All simulated GPUs hang off one host bridge each on one NUMA node: NODE between two, INTERNAL with itself.
NVML_API nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(void* a, void* b, int* level) {
  NEED_DEVICE(a);
  if (!valid(b) || level == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *level = a == b ? NVML_TOPOLOGY_INTERNAL : NVML_TOPOLOGY_NODE;
  return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetNvLinkState(void* d, unsigned int /*link*/, int* /*isActive*/) {
  NEED_DEVICE(d);
  return NVML_ERROR_NOT_SUPPORTED;  // no NVLink in the simulation
}

NVML_API nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(void* d, unsigned long long* reasons) {
  NEED_DEVICE(d);
  if (reasons == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *reasons = static_cast<unsigned long long>(knob("SIMGPU_NVML_THROTTLE_REASONS", 0));
  return NVML_SUCCESS;
}
NVML_API nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(void* d, unsigned long long* reasons) {
  return nvmlDeviceGetCurrentClocksThrottleReasons(d, reasons);
}

struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
NVML_API nvmlReturn_t nvmlDeviceGetUtilizationRates(void* d, nvmlUtilization_t* u) {
  NEED_DEVICE(d);
  if (u == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  u->gpu = static_cast<unsigned>(knob("SIMGPU_NVML_UTILIZATION", 0));
  u->memory = static_cast<unsigned>(knob("SIMGPU_NVML_MEMORY_UTILIZATION", 0));
  return NVML_SUCCESS;
}

// Other processes on the device: SIMGPU_NVML_PROCESSES of them (pids 1000...), as NVML reports
// them: the count with NVML_ERROR_INSUFFICIENT_SIZE when the caller's array is too small.
struct nvmlProcessInfo_t {  // the _v2/_v3 layout
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};
NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(void* d, unsigned int* count, nvmlProcessInfo_t* infos) {
  NEED_DEVICE(d);
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const unsigned n = static_cast<unsigned>(knob("SIMGPU_NVML_PROCESSES", 0));
  if (*count < n || (n > 0 && infos == nullptr)) {
    *count = n;
    return n == 0 ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (unsigned i = 0; i < n; ++i) infos[i] = nvmlProcessInfo_t{1000 + i, 64ull << 20, 0xffffffffu, 0xffffffffu};
  *count = n;
  return NVML_SUCCESS;
}
