#include "device/gpu_binding.h"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>

namespace commbench {
namespace {

// Devices a CUDA_VISIBLE_DEVICES value names (comma-separated; empty entries do not count).
int listed_devices(const char* value) {
  if (!value) return -1;
  int n = 0;
  std::string_view v(value);
  while (!v.empty()) {
    const size_t comma = v.find(',');
    const std::string_view item = v.substr(0, comma);
    if (item.find_first_not_of(" \t") != std::string_view::npos) ++n;
    if (comma == std::string_view::npos) break;
    v.remove_prefix(comma + 1);
  }
  return n;
}

}  // namespace

DeviceChoice choose_device(int local_rank, int local_world, int visible, std::optional<int> option,
                           const char* cuda_visible_devices) {
  DeviceChoice c;
  if (visible <= 0) {
    c.error = "no CUDA device is visible";
    return c;
  }
  if (option) {
    if (*option < 0 || *option >= visible) {
      c.error = fmt::format("device = {} but {} device(s) are visible (valid: 0..{})", *option,
                            visible, visible - 1);
      return c;
    }
    c.device = *option;
    c.how = fmt::format("option device = {}", *option);
    return c;
  }
  if (std::max(local_world, 1) <= visible) {
    if (local_rank < 0 || local_rank >= visible) {
      c.error = fmt::format("local rank {} has no device ({} visible)", local_rank, visible);
      return c;
    }
    c.device = local_rank;
    c.how = fmt::format("local rank {}", local_rank);
    return c;
  }
  if (visible == 1 && listed_devices(cuda_visible_devices) == 1) {
    c.device = 0;
    c.how = fmt::format("CUDA_VISIBLE_DEVICES={} (one device per rank, pinned by the launcher)",
                        cuda_visible_devices);
    return c;
  }
  c.error = fmt::format(
      "{} ranks on this host but {} visible GPU(s): one GPU per rank is needed (lower world_size, "
      "or let the launcher pin one device per rank with CUDA_VISIBLE_DEVICES)",
      local_world, visible);
  return c;
}

}  // namespace commbench
