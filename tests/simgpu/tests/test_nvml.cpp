// Simulated NVML, loaded with dlopen like the core does.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace {

struct Nvml {
  void* h = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  template <class F>
  F fn(const char* name) {
    return reinterpret_cast<F>(::dlsym(h, name));
  }
};

TEST(SimNvml, IdentityTelemetryAndTopology) {
  Nvml n;
  ASSERT_NE(n.h, nullptr) << "libnvidia-ml.so.1 not found: SIMGPU_LIB_DIR is not first on LD_LIBRARY_PATH";
  auto count = n.fn<int (*)(unsigned*)>("nvmlDeviceGetCount_v2");
  unsigned c = 0;
  EXPECT_EQ(count(&c), 1) << "calls before nvmlInit_v2 are NVML_ERROR_UNINITIALIZED";
  ASSERT_EQ(n.fn<int (*)()>("nvmlInit_v2")(), 0);
  ASSERT_EQ(count(&c), 0);
  EXPECT_EQ(c, 8u);
  void *d0 = nullptr, *d1 = nullptr, *by_bus = nullptr;
  ASSERT_EQ(n.fn<int (*)(unsigned, void**)>("nvmlDeviceGetHandleByIndex_v2")(0, &d0), 0);
  ASSERT_EQ(n.fn<int (*)(unsigned, void**)>("nvmlDeviceGetHandleByIndex_v2")(1, &d1), 0);
  auto by_pci = n.fn<int (*)(const char*, void**)>("nvmlDeviceGetHandleByPciBusId_v2");
  ASSERT_EQ(by_pci("0000:11:00.0", &by_bus), 0);
  EXPECT_EQ(by_bus, d1) << "the bus id cudaDeviceGetPCIBusId reports for device 1";
  EXPECT_EQ(by_pci("0000:99:00.0", &by_bus), 6) << "NVML_ERROR_NOT_FOUND";
  char text[96];
  ASSERT_EQ(n.fn<int (*)(void*, char*, unsigned)>("nvmlDeviceGetName")(d0, text, sizeof text), 0);
  EXPECT_NE(std::string(text).find("simulated"), std::string::npos);
  EXPECT_EQ(n.fn<int (*)(void*, char*, unsigned)>("nvmlDeviceGetName")(d0, text, 4), 7) << "INSUFFICIENT_SIZE";
  ASSERT_EQ(n.fn<int (*)(void*, char*, unsigned)>("nvmlDeviceGetUUID")(d1, text, sizeof text), 0);
  EXPECT_EQ(std::string(text).substr(0, 4), "GPU-");
  unsigned v = 0;
  ASSERT_EQ(n.fn<int (*)(void*, int, unsigned*)>("nvmlDeviceGetTemperature")(d0, 0, &v), 0);
  EXPECT_GT(v, 20u);
  EXPECT_LT(v, 90u);
  ASSERT_EQ(n.fn<int (*)(void*, unsigned*)>("nvmlDeviceGetPowerUsage")(d0, &v), 0);
  EXPECT_GT(v, 1000u) << "milliwatts";
  ASSERT_EQ(n.fn<int (*)(void*, int, unsigned*)>("nvmlDeviceGetClockInfo")(d0, 1, &v), 0);
  EXPECT_GT(v, 100u);
  int level = -1;
  auto topo = n.fn<int (*)(void*, void*, int*)>("nvmlDeviceGetTopologyCommonAncestor");
  ASSERT_EQ(topo(d0, d1, &level), 0);
  EXPECT_EQ(level, 40) << "NVML_TOPOLOGY_NODE";
  ASSERT_EQ(topo(d0, d0, &level), 0);
  EXPECT_EQ(level, 0);
  int active = 0;
  EXPECT_EQ(n.fn<int (*)(void*, unsigned, int*)>("nvmlDeviceGetNvLinkState")(d0, 0, &active), 3) << "NOT_SUPPORTED";
  struct Mem {
    unsigned long long total, free, used;
  } m{};
  ASSERT_EQ(n.fn<int (*)(void*, Mem*)>("nvmlDeviceGetMemoryInfo")(d0, &m), 0);
  EXPECT_EQ(m.total, 4ULL << 30);
  struct Pci {
    char legacy[16];
    unsigned domain, bus, device, id, sub;
    char bus_id[32];
  } p{};
  ASSERT_EQ(n.fn<int (*)(void*, Pci*)>("nvmlDeviceGetPciInfo_v3")(d1, &p), 0);
  EXPECT_EQ(p.bus, 0x11u);
  EXPECT_STREQ(p.bus_id, "00000000:11:00.0");
  int cuda = 0;
  ASSERT_EQ(n.fn<int (*)(int*)>("nvmlSystemGetCudaDriverVersion")(&cuda), 0);
  EXPECT_EQ(cuda, 13000);
  EXPECT_EQ(n.fn<int (*)()>("nvmlShutdown")(), 0);
}

}  // namespace

// The knobs the telemetry tests use: fixed readings, throttle reasons, utilisation, processes
// counted the way NVML answers an array that is too small.
TEST(SimNvml, KnobsGiveKnownTelemetryThrottlingAndBusyState) {
  Nvml n;
  ASSERT_NE(n.h, nullptr);
  ASSERT_EQ(n.fn<int (*)()>("nvmlInit_v2")(), 0);
  ::setenv("SIMGPU_NVML_TEMPERATURE", "61", 1);
  ::setenv("SIMGPU_NVML_POWER_W", "123.5", 1);
  ::setenv("SIMGPU_NVML_SM_CLOCK", "1410", 1);
  ::setenv("SIMGPU_NVML_THROTTLE_REASONS", "32", 1);
  ::setenv("SIMGPU_NVML_UTILIZATION", "40", 1);
  ::setenv("SIMGPU_NVML_PROCESSES", "2", 1);
  void* d = nullptr;
  ASSERT_EQ(n.fn<int (*)(unsigned, void**)>("nvmlDeviceGetHandleByIndex_v2")(3, &d), 0);
  unsigned v = 0;
  ASSERT_EQ(n.fn<int (*)(void*, int, unsigned*)>("nvmlDeviceGetTemperature")(d, 0, &v), 0);
  EXPECT_EQ(v, 61u);
  ASSERT_EQ(n.fn<int (*)(void*, unsigned*)>("nvmlDeviceGetPowerUsage")(d, &v), 0);
  EXPECT_EQ(v, 123500u) << "milliwatts";
  ASSERT_EQ(n.fn<int (*)(void*, int, unsigned*)>("nvmlDeviceGetClockInfo")(d, 1, &v), 0);
  EXPECT_EQ(v, 1410u);
  unsigned long long reasons = 0;
  ASSERT_EQ(n.fn<int (*)(void*, unsigned long long*)>("nvmlDeviceGetCurrentClocksThrottleReasons")(d, &reasons), 0);
  EXPECT_EQ(reasons, 0x20u);
  unsigned util[2] = {9, 9};
  ASSERT_EQ(n.fn<int (*)(void*, unsigned*)>("nvmlDeviceGetUtilizationRates")(d, util), 0);
  EXPECT_EQ(util[0], 40u);
  EXPECT_EQ(util[1], 0u);
  auto procs = n.fn<int (*)(void*, unsigned*, void*)>("nvmlDeviceGetComputeRunningProcesses_v3");
  unsigned count = 0;
  EXPECT_EQ(procs(d, &count, nullptr), 7) << "NVML_ERROR_INSUFFICIENT_SIZE with the count";
  EXPECT_EQ(count, 2u);
  ::setenv("SIMGPU_NVML_PROCESSES", "0", 1);
  count = 0;
  EXPECT_EQ(procs(d, &count, nullptr), 0);
  EXPECT_EQ(count, 0u);
  for (const char* k : {"SIMGPU_NVML_TEMPERATURE", "SIMGPU_NVML_POWER_W", "SIMGPU_NVML_SM_CLOCK",
                        "SIMGPU_NVML_THROTTLE_REASONS", "SIMGPU_NVML_UTILIZATION", "SIMGPU_NVML_PROCESSES"})
    ::unsetenv(k);
}
