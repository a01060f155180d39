#include "measure/memory_budget.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "common/cgroups.h"

namespace commbench {
namespace {

namespace fs = std::filesystem;

// v1 reports "no limit" as a huge page-rounded number (0x7ffffffffffff000).
constexpr uint64_t kUnlimited = 1ull << 62;

// A "key value" line of a memory.stat file (bytes); 0 when absent.
uint64_t stat_value(const fs::path& file, const std::string& key) { return read_keyed_value(file, key).value_or(0); }

std::optional<uint64_t> mem_available(const std::string& proc_root) {
  std::ifstream in(proc_root + "/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    unsigned long long kib = 0;
    if (std::sscanf(line.c_str(), "MemAvailable: %llu kB", &kib) == 1) return kib * 1024;
  }
  return std::nullopt;
}

void consider(std::optional<MemoryAvailable>& best, uint64_t bytes, std::string why) {
  if (!best || bytes < best->bytes) best = MemoryAvailable{bytes, std::move(why)};
}

// limit - (usage - reclaimable page cache) for each limited level.
void consider_cgroups(std::optional<MemoryAvailable>& best, const fs::path& mount,
                      const std::string& path, const char* limit_file, const char* usage_file,
                      const char* inactive_file_key) {
  for (const fs::path& dir : up_to_root(mount, path)) {
    const auto limit = read_cgroup_number(dir / limit_file);
    if (!limit || *limit >= kUnlimited) continue;
    const uint64_t usage = read_cgroup_number(dir / usage_file).value_or(0);
    const uint64_t cache = std::min(usage, stat_value(dir / "memory.stat", inactive_file_key));
    const uint64_t used = usage - cache;
    consider(best, *limit > used ? *limit - used : 0,
             fmt::format("cgroup limit {} in {}", *limit, (dir / limit_file).string()));
  }
}

std::string bytes_text(uint64_t b) {
  if (b >= (1ull << 30)) return fmt::format("{:.1f} GiB", b / double(1ull << 30));
  if (b >= (1ull << 20)) return fmt::format("{:.1f} MiB", b / double(1ull << 20));
  return fmt::format("{:.1f} KiB", b / 1024.0);
}

}  // namespace

std::optional<MemoryAvailable> available_memory(const MemorySources& s) {
  std::optional<MemoryAvailable> best;
  if (auto a = mem_available(s.proc_root)) consider(best, *a, "MemAvailable in " + s.proc_root + "/meminfo");
  const CgroupPaths own = own_cgroups(s.proc_root);
  if (own.v2) {
    // Unified hierarchy at the root, or (hybrid systems) under unified/.
    for (const fs::path& mount : {fs::path(s.cgroup_root), fs::path(s.cgroup_root) / "unified"})
      if (fs::exists(mount / "cgroup.controllers"))
        consider_cgroups(best, mount, *own.v2, "memory.max", "memory.current", "inactive_file");
  }
  if (own.v1_memory)
    consider_cgroups(best, fs::path(s.cgroup_root) / "memory", *own.v1_memory,
                     "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file");
  return best;
}

std::string memory_shortfall(uint64_t bytes_per_rank, int ranks_on_host, const MemorySources& s) {
  const auto avail = available_memory(s);
  if (!avail) return "";
  const uint64_t ranks = static_cast<uint64_t>(std::max(ranks_on_host, 1));
  // Saturating: sizes near 2^63 must not wrap around into "fits".
  const uint64_t need = bytes_per_rank > (UINT64_MAX - kMemoryHeadroomBytes) / ranks
                            ? UINT64_MAX
                            : bytes_per_rank * ranks + kMemoryHeadroomBytes;
  if (need <= avail->bytes) return "";
  return fmt::format(
      "its buffers need {} per rank{} plus {} of headroom, and {} is available ({})",
      bytes_text(bytes_per_rank),
      ranks > 1 ? fmt::format(" x {} ranks on this host", ranks) : std::string(),
      bytes_text(kMemoryHeadroomBytes), bytes_text(avail->bytes), avail->limited_by);
}

}  // namespace commbench
