// How timed iterations are measured; the record's `timing` field holds the name. One table for
// the experiment file (`gpu_timing`), the worker and the reports. measure/iteration_clock.h
// says what each method measures; docs/metrics.md and docs/gpu.md explain when to use which.
#pragma once

#include <optional>
#include <string_view>

namespace commbench {

enum class TimingMethod { Host, CudaEvent, HostStreamSync, CudaEventBatch };

inline std::string_view timing_name(TimingMethod m) {
  switch (m) {
    case TimingMethod::CudaEvent: return "cuda_event";
    case TimingMethod::HostStreamSync: return "host_stream_sync";
    case TimingMethod::CudaEventBatch: return "cuda_event_batch";
    default: return "host";
  }
}

inline std::optional<TimingMethod> parse_timing(std::string_view name) {
  for (TimingMethod m : {TimingMethod::Host, TimingMethod::CudaEvent, TimingMethod::HostStreamSync,
                         TimingMethod::CudaEventBatch})
    if (timing_name(m) == name) return m;
  return std::nullopt;
}

}  // namespace commbench
