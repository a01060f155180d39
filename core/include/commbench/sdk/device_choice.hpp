// Which CUDA device a rank uses: one rule for the core (which binds the device and allocates
// buffers) and the GPU plugins (which create communicators on it), so that both agree.
// Header-only plugin SDK; no CUDA header needed.
//
// The rule, in order:
//  1. an explicit device (the run's `device` option) is used as given, if it is visible;
//  2. when a launcher pinned each rank to one GPU (CUDA_VISIBLE_DEVICES set and exactly one device
//     visible), every rank uses device 0 — its own GPU — whatever its local rank;
//  3. otherwise local rank r uses device r; more local ranks than visible devices is refused,
//     because NCCL refuses two ranks on one GPU ("Duplicate GPU detected").
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace commbench::sdk {

struct DeviceChoice {
  int device = -1;     // valid when error is empty
  std::string error;   // why no device can be chosen (the case or run is unavailable)
};

inline DeviceChoice choose_device(int local_rank, int local_world_size, int visible_devices,
                                  std::optional<int> requested,
                                  const char* cuda_visible_devices = std::getenv("CUDA_VISIBLE_DEVICES")) {
  DeviceChoice c;
  if (visible_devices <= 0) {
    c.error = "no CUDA device is visible";
    return c;
  }
  if (requested) {
    if (*requested < 0 || *requested >= visible_devices)
      c.error = "device " + std::to_string(*requested) + " was asked for but only " +
                std::to_string(visible_devices) + " device(s) are visible";
    else
      c.device = *requested;
    return c;
  }
  const bool pinned = cuda_visible_devices != nullptr && *cuda_visible_devices != '\0' && visible_devices == 1;
  if (pinned) {
    c.device = 0;
    return c;
  }
  const int ranks = local_world_size > 0 ? local_world_size : 1;
  if (ranks > visible_devices) {
    c.error = std::to_string(ranks) + " ranks on this host but " + std::to_string(visible_devices) +
              " visible GPU(s): this world size is skipped (NCCL refuses two ranks on one GPU; pin one GPU "
              "per rank with CUDA_VISIBLE_DEVICES, or set the device option)";
    return c;
  }
  c.device = local_rank;
  return c;
}

}  // namespace commbench::sdk
