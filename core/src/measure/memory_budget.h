// Whether a case's host buffers fit in the memory this process can really get. malloc succeeds
// far beyond that (overcommit, cgroup limits), and the first touch then brings the OOM killer,
// which takes a rank and with it the execution and every later case. Checked before allocating:
// the least of /proc/meminfo's MemAvailable and, for every memory cgroup (v2 memory.max, v1
// memory.limit_in_bytes) from this process's up to the root, its limit minus its usage (less
// the page cache it can reclaim).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace commbench {

// Where the facts are read; tests point these at fake trees.
struct MemorySources {
  std::string proc_root = "/proc";            // meminfo, self/cgroup
  std::string cgroup_root = "/sys/fs/cgroup";  // v2 (or v2 under unified/), v1 under memory/
};

struct MemoryAvailable {
  uint64_t bytes = 0;
  std::string limited_by;  // "MemAvailable in /proc/meminfo" or the cgroup file that limits
};

// nullopt when nothing could be read (then nothing is skipped).
std::optional<MemoryAvailable> available_memory(const MemorySources& sources = {});

// Kept free beyond the buffers: the backend's own allocations, the samples, the process.
inline constexpr uint64_t kMemoryHeadroomBytes = 64ull << 20;

// "" when `bytes_per_rank` for each of the `ranks_on_host` ranks of this host (they allocate the
// same case at the same time) fits with the headroom; otherwise why not, with the numbers.
std::string memory_shortfall(uint64_t bytes_per_rank, int ranks_on_host,
                             const MemorySources& sources = {});

}  // namespace commbench
