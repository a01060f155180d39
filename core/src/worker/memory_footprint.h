// Memory an execution costs on one rank (docs/output.md, metadata.ranks.<r>.memory_footprint):
// host RSS before and after the backend's init and communicator creation, device memory the
// communicator took (cudaMemGetInfo before and after comm_create, so it includes whatever the
// library allocates on the device at init: NCCL's buffers, proxies' FIFOs), and the most device
// memory one case's buffers took.
#pragma once

#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

namespace commbench {

// Resident set size of this process, in bytes (/proc/self/statm); 0 when unreadable.
uint64_t resident_bytes();

struct MemoryFootprint {
  uint64_t host_rss_before_init = 0;
  uint64_t host_rss_after_init = 0;  // after init and comm_create
  std::optional<uint64_t> device_free_before_comm;
  std::optional<uint64_t> device_free_after_comm;
  std::optional<uint64_t> device_total;
  uint64_t buffers_device_peak = 0;

  nlohmann::json to_json() const;
};

}  // namespace commbench
