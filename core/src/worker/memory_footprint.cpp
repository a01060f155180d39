#include "worker/memory_footprint.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

namespace commbench {

uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

uint64_t heap_in_use_bytes() {
  const struct mallinfo2 m = ::mallinfo2();
  return static_cast<uint64_t>(m.uordblks) + static_cast<uint64_t>(m.hblkhd);
}

namespace {

// A "<key>: <n> kB" line of a /proc file, in bytes; 0 when absent.
uint64_t proc_kib(const char* file, std::string_view key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line))
    if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 && line[key.size()] == ':')
      return std::strtoull(line.c_str() + key.size() + 1, nullptr, 10) * 1024;
  return 0;
}

}  // namespace

uint64_t peak_resident_bytes() { return proc_kib("/proc/self/status", "VmHWM"); }
uint64_t available_host_bytes() { return proc_kib("/proc/meminfo", "MemAvailable"); }

nlohmann::json MemoryFootprint::to_json() const {
  nlohmann::json j;
  j["host_rss_before_init_bytes"] = host_rss_before_init;
  j["host_rss_after_init_bytes"] = host_rss_after_init;
  j["host_rss_init_delta_bytes"] =
      static_cast<int64_t>(host_rss_after_init) - static_cast<int64_t>(host_rss_before_init);
  if (host_rss_peak > 0) j["host_rss_peak_bytes"] = host_rss_peak;
  if (device_free_before_comm && device_free_after_comm) {
    j["device_free_before_comm_bytes"] = *device_free_before_comm;
    j["device_free_after_comm_bytes"] = *device_free_after_comm;
    // Free memory can grow (another process freed some): never report a negative footprint.
    j["comm_device_bytes"] = *device_free_before_comm > *device_free_after_comm
                                 ? *device_free_before_comm - *device_free_after_comm : 0;
    j["buffers_device_peak_bytes"] = buffers_device_peak;
    if (device_free_after_ops) {
      j["device_free_after_ops_bytes"] = *device_free_after_ops;
      j["comm_device_bytes_after_ops"] = *device_free_before_comm > *device_free_after_ops
                                             ? *device_free_before_comm - *device_free_after_ops : 0;
    }
  }
  if (device_total) j["device_total_bytes"] = *device_total;
  return j;
}

}  // namespace commbench
