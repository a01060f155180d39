// The memory benchmark on one rank (issue 15 §3, docs/workloads.md "Memory"): per model and batch
// size, what the estimate says (workload/memory_estimate.h) next to what was measured — host
// RSS and, with memory = "cuda", device memory (cudaMemGetInfo) — at each phase: before and after
// communicator creation (the backend's own footprint, worker/memory_footprint.h), after the model
// state's buffers, after the workload (the peak). One "memory" record per (model, batch size).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "bootstrap/collectives.h"
#include "device/gpu_device.h"
#include "plan/plan.h"
#include "worker/memory_footprint.h"
#include "workload/memory_estimate.h"

namespace commbench::workload {

// Memory in use at one instant on this rank.
struct MemoryPhase {
  uint64_t host_rss = 0;
  std::optional<uint64_t> device_free;  // only with a GPU
};
MemoryPhase memory_now(const GpuDevice* gpu);
// `into` becomes the fuller of the two: the larger RSS, the smaller free device memory.
void keep_fuller(MemoryPhase& into, const MemoryPhase& now);

// What one record is about (its identity beyond the execution's).
struct MemoryCase {
  std::string workload;  // "memory" | "data_parallel"
  std::string model;
  uint64_t batch_size = 1;
  cb_dtype dtype = CB_DTYPE_F32;
  Optimizer optimizer = Optimizer::Adam;
  bool sharded = false;
  MemoryEstimate computed;
};

// The case of a model at one batch size, its estimate computed (workload: "memory" | "data_parallel").
MemoryCase memory_case_of(const Execution& exec, const Model& model, const char* workload, int batch_size,
                          cb_dtype dtype, Optimizer optimizer, bool sharded);

// Measurements of one case on one rank: the phases after communicator creation.
struct MemoryMeasured {
  MemoryPhase before_buffers, after_buffers, after_workload;
  uint64_t host_rss_peak = 0;  // VmHWM: the process's high-water mark so far
  std::string status = "ok";   // "ok" | "failed" (out of memory) | "unsupported"
  std::string reason;
};

// workload = "memory": allocates the model state (parameters, gradients, optimizer state, master
// weights) then the batch's activations as real buffers in exec.memory, touches every page
// (host memory; device memory from cudaMalloc is committed when allocated), measures, frees.
// Running out of memory is a "failed" measurement saying what did not fit, never a crash: the
// device allocator's RESOURCE_EXHAUSTED, or host memory beyond MemAvailable (checked first, so
// the kernel's OOM killer is not what answers).
MemoryMeasured measure_memory_case(const Execution& exec, const MemoryCase& c, GpuDevice* gpu);

// The record (docs/output.md, "Memory records"): the execution's identity, the case, `computed`,
// and `measured` — this rank's communicator footprint and phases, gathered so that rank 0 writes
// the largest value over ranks of every byte count (the rank that runs out first is what
// matters). Collective over the execution's ranks: every rank calls it; rank 0's return is sent.
nlohmann::ordered_json memory_record(const Execution& exec, const MemoryCase& c, const MemoryFootprint& comm,
                                     const MemoryMeasured& m, Bootstrap& bootstrap, Millis timeout);

// What a `workload = "memory"` execution measures.
struct MemoryRunSpec {
  Model model;
  std::vector<int> batch_sizes;
  cb_dtype dtype = CB_DTYPE_F32;
  Optimizer optimizer = Optimizer::Adam;
  bool sharded = false;
};

// Every batch size in turn: measure_memory_case, then memory_record; rank 0 hands each record to
// `send`. `progress` names the batch size being measured (the worker's phase).
void run_memory_workload(const Execution& exec, const MemoryRunSpec& spec, GpuDevice* gpu,
                         const MemoryFootprint& comm, Bootstrap& bootstrap, Millis timeout,
                         const std::function<void(const std::string&)>& progress,
                         const std::function<void(nlohmann::ordered_json)>& send);

}  // namespace commbench::workload
