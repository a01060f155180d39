// Which GPU a worker uses. The rule (docs/gpu.md, "Device binding"):
//  - the run's `device` option, when given, names the device index (among the visible ones);
//  - else the local rank, when the host has at least as many visible devices as local ranks;
//  - else, when exactly one device is visible and CUDA_VISIBLE_DEVICES names exactly one device
//    (a launcher pinned each rank to its own GPU), device 0;
//  - else it is an error: more local ranks than GPUs (NCCL refuses two ranks on one GPU, and
//    sharing a GPU would measure contention, not the library).
#pragma once

#include <optional>
#include <string>

namespace commbench {

struct DeviceChoice {
  int device = -1;      // valid when error is empty
  std::string how;      // "local rank 1", "option device = 3", "CUDA_VISIBLE_DEVICES=5 (pinned)"
  std::string error;    // what is wrong and what to do
};

// Pure: `cuda_visible_devices` is the environment variable's value (nullptr when unset).
DeviceChoice choose_device(int local_rank, int local_world, int visible_devices,
                           std::optional<int> option, const char* cuda_visible_devices);

}  // namespace commbench
