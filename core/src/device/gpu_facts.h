// The GPU facts a rank puts in its metadata (docs/output.md, "GPU metadata"): the CUDA runtime's
// view of the bound device, NVML's identity and telemetry for it (or why NVML is unavailable),
// and, from local rank 0, the host's GPU-to-GPU topology.
#pragma once

#include <nlohmann/json.hpp>

#include "device/gpu_device.h"

namespace commbench {

// {"cuda": {...}, "nvml": {...}}.
nlohmann::json gpu_identity(const GpuDevice& gpu);
// Clocks, temperature, power now; {"available": false, "reason": ...} without NVML.
nlohmann::json gpu_telemetry(const GpuDevice& gpu);
// NVML's common-ancestor matrix of every GPU of this host.
nlohmann::json gpu_topology();

}  // namespace commbench
