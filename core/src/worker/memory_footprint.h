// Memory an execution costs on one rank (docs/output.md, metadata.ranks.<r>.memory_footprint):
// host RSS before and after the backend's init and communicator creation, device memory the
// communicator took (cudaMemGetInfo before and after comm_create: what the library allocates at
// init) and what the backend holds once ops ran (after each case: what it allocates lazily), the
// most device memory one case's buffers took; host RSS's high-water mark at the end. The memory benchmark
// (workload/memory_run.h) measures its own phases after these.
#pragma once

#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

namespace commbench {

// Resident set size of this process, in bytes (/proc/self/statm); 0 when unreadable.
uint64_t resident_bytes();
// Bytes the C library's allocator has handed out and not had back (every arena and its mmapped
// chunks: mallinfo2); byte-exact where RSS moves in pages. 0 under an allocator that replaces
// glibc's (a sanitizer's).
uint64_t heap_in_use_bytes();
// The most this process has had resident (VmHWM of /proc/self/status), in bytes; 0 when unreadable.
uint64_t peak_resident_bytes();
// Memory the kernel could give without swapping (MemAvailable of /proc/meminfo); 0 when unreadable.
uint64_t available_host_bytes();

struct MemoryFootprint {
  uint64_t host_rss_before_init = 0;
  uint64_t host_rss_after_init = 0;  // after init and comm_create
  std::optional<uint64_t> device_free_before_comm;
  std::optional<uint64_t> device_free_after_comm;
  std::optional<uint64_t> device_total;
  uint64_t buffers_device_peak = 0;
  uint64_t host_rss_peak = 0;  // VmHWM at the end of the execution (0: not measured yet)
  // The lowest free device memory seen after a case, its buffers freed: what the backend holds
  // once ops ran. NCCL >= 2.22 connects peers and allocates their buffers at the first op that
  // needs them (NCCL_RUNTIME_CONNECT), so comm_create alone misses most of its footprint.
  std::optional<uint64_t> device_free_after_ops;
  void note_device_free_after_case(uint64_t free_bytes) {
    if (!device_free_after_ops || free_bytes < *device_free_after_ops) device_free_after_ops = free_bytes;
  }

  nlohmann::json to_json() const;
};

}  // namespace commbench
