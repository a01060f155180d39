// The names of the data-parallel workload's enumerated settings (docs/workloads.md), defined
// once: the run-settings table reads and writes them, the worker and reports use them.
#pragma once

#include <string_view>

namespace commbench {

// Memory: no steps; the model state and activations allocated for real and measured
// (workload/memory_run.h, docs/workloads.md "Memory").
enum class WorkloadKind { None, DataParallel, Memory };
enum class Sharding { Ddp, Fsdp };
// Where each layer's compute time comes from: `compute_ms` split over the layers by FLOPs, or the
// layers' FLOPs at a rate measured on this device before the steps.
enum class ComputeSource { Time, Flops };

constexpr std::string_view workload_name(WorkloadKind k) {
  return k == WorkloadKind::DataParallel ? "data_parallel" : k == WorkloadKind::Memory ? "memory" : "none";
}
constexpr std::string_view sharding_name(Sharding s) { return s == Sharding::Fsdp ? "fsdp" : "ddp"; }
constexpr std::string_view compute_source_name(ComputeSource c) {
  return c == ComputeSource::Flops ? "flops" : "time";
}

}  // namespace commbench
