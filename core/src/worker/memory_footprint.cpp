#include "worker/memory_footprint.h"

#include <unistd.h>

#include <fstream>

namespace commbench {

uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

nlohmann::json MemoryFootprint::to_json() const {
  nlohmann::json j;
  j["host_rss_before_init_bytes"] = host_rss_before_init;
  j["host_rss_after_init_bytes"] = host_rss_after_init;
  j["host_rss_init_delta_bytes"] =
      static_cast<int64_t>(host_rss_after_init) - static_cast<int64_t>(host_rss_before_init);
  if (device_free_before_comm && device_free_after_comm) {
    j["device_free_before_comm_bytes"] = *device_free_before_comm;
    j["device_free_after_comm_bytes"] = *device_free_after_comm;
    // Free memory can grow (another process freed some): never report a negative footprint.
    j["comm_device_bytes"] = *device_free_before_comm > *device_free_after_comm
                                 ? *device_free_before_comm - *device_free_after_comm : 0;
    j["buffers_device_peak_bytes"] = buffers_device_peak;
  }
  if (device_total) j["device_total_bytes"] = *device_total;
  return j;
}

}  // namespace commbench
