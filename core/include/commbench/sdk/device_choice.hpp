// Which CUDA device a rank uses: one rule for the core (which binds the device and allocates
// buffers) and the GPU plugins (which create communicators on it), so that both agree.
// Header-only plugin SDK; no CUDA header needed. docs/gpu.md, "Device binding".
//
// The rule, in order:
//  1. an explicit device (the `device` option) is used as given, if it is visible;
//  2. local rank r uses device r when the host has at least as many visible devices as local ranks;
//  3. when exactly one device is visible and CUDA_VISIBLE_DEVICES names exactly one (a launcher
//     pinned each rank to its own GPU), every rank uses device 0 — its own GPU;
//  4. with `shared` (the run setting oversubscribe_gpu, CB_HOST_SHARED_DEVICE): local rank r uses
//     device r mod visible — several ranks on one GPU, a correctness mode only;
//  5. otherwise no device: more local ranks than GPUs (NCCL refuses two ranks on one GPU,
//     "Duplicate GPU detected", and sharing one would measure contention, not the library).
#pragma once

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace commbench::sdk {

struct DeviceChoice {
  int device = -1;    // valid when error is empty
  std::string how;    // "local rank 1", "option device = 3", "CUDA_VISIBLE_DEVICES=5 (pinned ...)"
  std::string error;  // what is wrong and what to do
};

namespace detail {
// Devices a CUDA_VISIBLE_DEVICES value names (comma-separated; blank entries do not count);
// -1 when unset.
inline int listed_devices(const char* value) {
  if (value == nullptr) return -1;
  int n = 0;
  std::string_view v(value);
  while (true) {
    const size_t comma = v.find(',');
    if (v.substr(0, comma).find_first_not_of(" \t") != std::string_view::npos) ++n;
    if (comma == std::string_view::npos) break;
    v.remove_prefix(comma + 1);
  }
  return n;
}
}  // namespace detail

// Pure: `cuda_visible_devices` is the environment variable's value (nullptr when unset).
inline DeviceChoice choose_device(int local_rank, int local_world, int visible, std::optional<int> option,
                                  const char* cuda_visible_devices, bool shared = false) {
  DeviceChoice c;
  if (visible <= 0) {
    c.error = "no CUDA device is visible";
    return c;
  }
  if (option) {
    if (*option < 0 || *option >= visible) {
      c.error = "device = " + std::to_string(*option) + " but " + std::to_string(visible) +
                " device(s) are visible (valid: 0.." + std::to_string(visible - 1) + ")";
      return c;
    }
    c.device = *option;
    c.how = "option device = " + std::to_string(*option);
    return c;
  }
  if (std::max(local_world, 1) <= visible) {
    if (local_rank < 0 || local_rank >= visible) {
      c.error = "local rank " + std::to_string(local_rank) + " has no device (" + std::to_string(visible) + " visible)";
      return c;
    }
    c.device = local_rank;
    c.how = "local rank " + std::to_string(local_rank);
    return c;
  }
  if (visible == 1 && detail::listed_devices(cuda_visible_devices) == 1) {
    c.device = 0;
    c.how = std::string("CUDA_VISIBLE_DEVICES=") + cuda_visible_devices +
            " (one device per rank, pinned by the launcher)";
    return c;
  }
  if (shared && local_rank >= 0) {
    c.device = local_rank % visible;
    c.how = "local rank " + std::to_string(local_rank) + " mod " + std::to_string(visible) +
            " visible (oversubscribe_gpu: GPU shared, correctness only)";
    return c;
  }
  c.error = std::to_string(local_world) + " ranks on this host but " + std::to_string(visible) +
            " visible GPU(s): one GPU per rank is needed (lower world_size, let the launcher pin one "
            "device per rank with CUDA_VISIBLE_DEVICES, or set oversubscribe_gpu = true for a "
            "correctness-only run with ranks sharing a GPU)";
  return c;
}

}  // namespace commbench::sdk
