// Helpers shared by the exported CUDA runtime entry points.
#pragma once

#include <cuda_runtime_api.h>

#include "devices.hpp"
#include "streams.hpp"

namespace simgpu {

// Per-thread current device (a visible ordinal) and last error, as in CUDA.
int& current_ordinal();
cudaError_t& last_error();

inline cudaError_t fail(cudaError_t e) {
  if (e != cudaSuccess) last_error() = e;
  return e;
}

inline int current_physical() { return Devices::get().physical_of(current_ordinal()); }

}  // namespace simgpu

#define SIMGPU_API extern "C" __attribute__((visibility("default")))
