#include "device/nvml.h"

#include <dlfcn.h>

#include <mutex>

#include <fmt/format.h>

namespace commbench {
namespace {

// NVML ABI (nvml.h): nvmlReturn_t is an int, 0 = NVML_SUCCESS; handles are opaque pointers.
using Ret = int;
using Dev = void*;
constexpr Ret kOk = 0;
constexpr int kTemperatureGpu = 0;               // NVML_TEMPERATURE_GPU
constexpr int kClockSm = 1, kClockMem = 2;       // NVML_CLOCK_SM, NVML_CLOCK_MEM
constexpr unsigned kMaxNvLinks = 18;             // NVML_NVLINK_MAX_LINKS
constexpr unsigned kStringBytes = 96;            // >= NVML_DEVICE_NAME_V2_BUFFER_SIZE, UUID size

// nvmlGpuTopologyLevel_t values and nvidia-smi's names for them.
const char* level_name(int level) {
  switch (level) {
    case 0: return "internal (same board)";
    case 10: return "PIX (single PCIe switch)";
    case 20: return "PXB (multiple PCIe switches)";
    case 30: return "PHB (PCIe host bridge)";
    case 40: return "NODE (same NUMA node, across host bridges)";
    case 50: return "SYS (across NUMA nodes)";
    default: return "unknown";
  }
}

}  // namespace

struct Nvml::Api {
  Ret (*Init)() = nullptr;
  const char* (*ErrorString)(Ret) = nullptr;
  Ret (*SystemGetDriverVersion)(char*, unsigned) = nullptr;
  Ret (*SystemGetCudaDriverVersion)(int*) = nullptr;
  Ret (*DeviceGetCount)(unsigned*) = nullptr;
  Ret (*DeviceGetHandleByIndex)(unsigned, Dev*) = nullptr;
  Ret (*DeviceGetHandleByPciBusId)(const char*, Dev*) = nullptr;
  Ret (*DeviceGetName)(Dev, char*, unsigned) = nullptr;
  Ret (*DeviceGetUUID)(Dev, char*, unsigned) = nullptr;
  Ret (*DeviceGetTemperature)(Dev, int, unsigned*) = nullptr;
  Ret (*DeviceGetPowerUsage)(Dev, unsigned*) = nullptr;  // milliwatts
  Ret (*DeviceGetClockInfo)(Dev, int, unsigned*) = nullptr;
  Ret (*DeviceGetTopologyCommonAncestor)(Dev, Dev, int*) = nullptr;
  Ret (*DeviceGetNvLinkState)(Dev, unsigned, int*) = nullptr;
  // Optional (telemetry): absent in old drivers, the reading is then left out.
  Ret (*DeviceGetThrottleReasons)(Dev, unsigned long long*) = nullptr;
  Ret (*DeviceGetUtilizationRates)(Dev, unsigned*) = nullptr;  // nvmlUtilization_t {gpu, memory}
  Ret (*DeviceGetComputeRunningProcesses)(Dev, unsigned*, void*) = nullptr;

  std::string error(Ret r) const {
    const char* s = ErrorString ? ErrorString(r) : nullptr;
    return s ? s : fmt::format("NVML error {}", r);
  }
};

const Nvml* Nvml::get(std::string* why) {
  static Nvml* nvml = nullptr;
  static std::string reason;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = ::dlerror();
      reason = fmt::format("libnvidia-ml.so.1 could not be loaded ({}); it comes with the NVIDIA driver",
                           e ? e : "unknown error");
      return;
    }
    auto* api = new Api();
    std::string missing;
    auto bind = [&](const char* name, auto& fn) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
      if (!fn) missing += missing.empty() ? name : fmt::format(", {}", name);
    };
    bind("nvmlInit_v2", api->Init);
    bind("nvmlErrorString", api->ErrorString);
    bind("nvmlSystemGetDriverVersion", api->SystemGetDriverVersion);
    bind("nvmlSystemGetCudaDriverVersion", api->SystemGetCudaDriverVersion);
    bind("nvmlDeviceGetCount_v2", api->DeviceGetCount);
    bind("nvmlDeviceGetHandleByIndex_v2", api->DeviceGetHandleByIndex);
    bind("nvmlDeviceGetHandleByPciBusId_v2", api->DeviceGetHandleByPciBusId);
    bind("nvmlDeviceGetName", api->DeviceGetName);
    bind("nvmlDeviceGetUUID", api->DeviceGetUUID);
    bind("nvmlDeviceGetTemperature", api->DeviceGetTemperature);
    bind("nvmlDeviceGetPowerUsage", api->DeviceGetPowerUsage);
    bind("nvmlDeviceGetClockInfo", api->DeviceGetClockInfo);
    bind("nvmlDeviceGetTopologyCommonAncestor", api->DeviceGetTopologyCommonAncestor);
    bind("nvmlDeviceGetNvLinkState", api->DeviceGetNvLinkState);
    const std::string required_missing = missing;
    bind("nvmlDeviceGetCurrentClocksThrottleReasons", api->DeviceGetThrottleReasons);
    bind("nvmlDeviceGetUtilizationRates", api->DeviceGetUtilizationRates);
    bind("nvmlDeviceGetComputeRunningProcesses_v3", api->DeviceGetComputeRunningProcesses);
    missing = required_missing;
    if (!missing.empty()) {
      reason = fmt::format("libnvidia-ml.so.1 lacks {}", missing);
      return;
    }
    if (const Ret r = api->Init(); r != kOk) {
      reason = fmt::format("nvmlInit_v2 failed: {}", api->error(r));
      return;
    }
    nvml = new Nvml();  // lives for the process; nvmlShutdown at exit is not needed
    nvml->api_ = api;
  });
  if (why) *why = reason;
  return nvml;
}

nlohmann::json Nvml::identity(const std::string& pci_bus_id) const {
  nlohmann::json j{{"available", true}};
  char text[kStringBytes] = {0};
  if (const Ret r = api_->SystemGetDriverVersion(text, sizeof(text)); r == kOk) j["driver_version"] = text;
  int cuda = 0;
  if (api_->SystemGetCudaDriverVersion(&cuda) == kOk) j["cuda_driver_version"] = cuda;
  Dev d = nullptr;
  if (const Ret r = api_->DeviceGetHandleByPciBusId(pci_bus_id.c_str(), &d); r != kOk) {
    j["device_error"] = fmt::format("nvmlDeviceGetHandleByPciBusId_v2({}): {}", pci_bus_id, api_->error(r));
    return j;
  }
  j["pci_bus_id"] = pci_bus_id;
  if (api_->DeviceGetName(d, text, sizeof(text)) == kOk) j["name"] = text;
  if (api_->DeviceGetUUID(d, text, sizeof(text)) == kOk) j["uuid"] = text;
  unsigned up = 0;
  for (unsigned link = 0; link < kMaxNvLinks; ++link) {
    int state = 0;
    if (api_->DeviceGetNvLinkState(d, link, &state) != kOk) break;  // no more links (or none)
    up += state != 0;
  }
  j["nvlinks_active"] = up;
  return j;
}

nlohmann::json Nvml::telemetry(const std::string& pci_bus_id) const {
  nlohmann::json j = nlohmann::json::object();
  Dev d = nullptr;
  if (const Ret r = api_->DeviceGetHandleByPciBusId(pci_bus_id.c_str(), &d); r != kOk) {
    j["error"] = api_->error(r);
    return j;
  }
  unsigned v = 0;
  if (api_->DeviceGetClockInfo(d, kClockSm, &v) == kOk) j["sm_clock_mhz"] = v;
  if (api_->DeviceGetClockInfo(d, kClockMem, &v) == kOk) j["memory_clock_mhz"] = v;
  if (api_->DeviceGetTemperature(d, kTemperatureGpu, &v) == kOk) j["temperature_c"] = v;
  if (api_->DeviceGetPowerUsage(d, &v) == kOk) j["power_w"] = v / 1000.0;
  return j;
}

nlohmann::json Nvml::topology() const {
  nlohmann::json j = nlohmann::json::object();
  unsigned n = 0;
  if (const Ret r = api_->DeviceGetCount(&n); r != kOk) {
    j["error"] = fmt::format("nvmlDeviceGetCount_v2: {}", api_->error(r));
    return j;
  }
  std::vector<Dev> devs(n, nullptr);
  nlohmann::json gpus = nlohmann::json::array();
  for (unsigned i = 0; i < n; ++i) {
    char uuid[kStringBytes] = {0};
    if (api_->DeviceGetHandleByIndex(i, &devs[i]) == kOk) api_->DeviceGetUUID(devs[i], uuid, sizeof(uuid));
    gpus.push_back(uuid);
  }
  nlohmann::json pairs = nlohmann::json::array();
  for (unsigned a = 0; a < n; ++a)
    for (unsigned b = a + 1; b < n; ++b) {
      int level = -1;
      if (!devs[a] || !devs[b] || api_->DeviceGetTopologyCommonAncestor(devs[a], devs[b], &level) != kOk) continue;
      pairs.push_back({{"a", a}, {"b", b}, {"common_ancestor", level_name(level)}});
    }
  j["gpus"] = gpus;
  j["pairs"] = pairs;
  return j;
}

unsigned Nvml::device_count() const {
  unsigned n = 0;
  return api_->DeviceGetCount(&n) == kOk ? n : 0;
}

Nvml::Reading Nvml::read(unsigned index) const {
  Reading r;
  Dev d = nullptr;
  if (api_->DeviceGetHandleByIndex(index, &d) != kOk) return r;
  unsigned v = 0;
  if (api_->DeviceGetTemperature(d, kTemperatureGpu, &v) == kOk) r.temperature_c = v;
  if (api_->DeviceGetPowerUsage(d, &v) == kOk) r.power_w = v / 1000.0;
  if (api_->DeviceGetClockInfo(d, kClockSm, &v) == kOk) r.sm_clock_mhz = v;
  if (api_->DeviceGetClockInfo(d, kClockMem, &v) == kOk) r.memory_clock_mhz = v;
  unsigned long long reasons = 0;
  if (api_->DeviceGetThrottleReasons && api_->DeviceGetThrottleReasons(d, &reasons) == kOk)
    r.throttle_reasons = reasons;
  unsigned util[2] = {0, 0};
  if (api_->DeviceGetUtilizationRates && api_->DeviceGetUtilizationRates(d, util) == kOk) {
    r.utilization_gpu_pct = util[0];
    r.utilization_memory_pct = util[1];
  }
  // Asked with no room: NVML answers success for none, "insufficient size" with the count.
  unsigned count = 0;
  if (api_->DeviceGetComputeRunningProcesses) {
    const Ret p = api_->DeviceGetComputeRunningProcesses(d, &count, nullptr);
    if (p == kOk || p == 7 /* NVML_ERROR_INSUFFICIENT_SIZE */) r.processes = count;
  }
  return r;
}

nlohmann::json Nvml::describe(unsigned index) const {
  nlohmann::json j{{"index", index}};
  Dev d = nullptr;
  if (api_->DeviceGetHandleByIndex(index, &d) != kOk) return j;
  char text[kStringBytes] = {0};
  if (api_->DeviceGetName(d, text, sizeof(text)) == kOk) j["name"] = text;
  if (api_->DeviceGetUUID(d, text, sizeof(text)) == kOk) j["uuid"] = text;
  return j;
}

nlohmann::json Nvml::driver() const {
  nlohmann::json j = nlohmann::json::object();
  char text[kStringBytes] = {0};
  if (api_->SystemGetDriverVersion(text, sizeof(text)) == kOk) j["driver_version"] = text;
  int cuda = 0;
  if (api_->SystemGetCudaDriverVersion(&cuda) == kOk) j["cuda_driver_version"] = cuda;
  return j;
}

nlohmann::json nvml_unavailable(const std::string& why) {
  return {{"available", false}, {"reason", why}};
}

}  // namespace commbench
