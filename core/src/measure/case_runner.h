// Measures one case on every rank: buffers, correctness check, warm-up, timed iterations with a
// synchronised start, then cross-rank aggregation of the per-iteration times. Collective over
// the ranks of the execution: every rank calls it with the same case.
#pragma once

#include <chrono>
#include <functional>
#include <optional>

#include "bootstrap/collectives.h"
#include "common/memory_staging.h"
#include "device/gpu_device.h"
#include "measure/case_record.h"
#include "measure/iteration_clock.h"
#include "measure/trace_recorder.h"
#include "plan/plan.h"
#include "plugin/backend_session.h"

namespace commbench {

struct CaseEnvironment {
  BackendSession& session;
  Bootstrap& bootstrap;
  const Execution& exec;
  cb_capabilities caps;
  std::chrono::steady_clock::time_point deadline;  // the execution's timeout
  MemoryPlan memory;              // where buffers live, what the backend is handed
  GpuDevice* gpu = nullptr;       // memory = "cuda" and CUDA usable here
  std::string gpu_unusable;       // memory = "cuda" but no usable CUDA: why (cases unsupported)
  TimingMethod timing = TimingMethod::Host;
  uint64_t buffers_device_peak = 0;  // largest device memory one case's buffers took
  int local_world = 1;  // ranks of this execution on this host: they share its memory
  TraceRecorder* trace = nullptr;  // the rank's trace; null or off: nothing recorded
  std::vector<int> clock_group;    // each rank's clock group leader (measure/clock_sync.h); empty: unknown
};

// The environment's trace recorder, an off one when it has none.
TraceRecorder& trace_of(CaseEnvironment& env);
// A case's trace configuration args (its name: describe_case, plan/plan.h).
nlohmann::json trace_case_args(const Execution& e, const CaseSpec& c);

// Milliseconds left until the execution's deadline (at least 1).
int32_t remaining_ms(const CaseEnvironment& env);
// Synchronised start: the backend's own barrier when it has one (cheapest), else the store's.
void sync_start(CaseEnvironment& env);
// Before the ranks leave the backend for a wait of the core's own (a bootstrap collective): the
// backend's barrier, where it has one. A backend that progresses only inside its calls (UCX)
// can owe a peer a message for an op that has completed here, such as a rendezvous's
// acknowledgement that the peer's send waits for, and would never send it while this rank sits
// in the bootstrap. In the barrier every rank progresses until all have arrived, so every op
// before it has completed everywhere. Collective: every rank calls it at the same point.
void settle_backend(CaseEnvironment& env);

// A record with the case's identity filled in (no outcome yet).
CaseRecord make_case_record(const Execution& e, const CaseSpec& c);

// Returns the record on rank 0, nullopt on other ranks. Throws PluginError / StoreError for
// failures that break the communicator (the execution then fails).
std::optional<CaseRecord> run_case(CaseEnvironment& env, const CaseSpec& spec);

// Why the backend cannot run this case according to its capabilities ("" = it can).
// `plan` says where the buffers would live (common/memory_staging.h).
std::string unsupported_reason(const cb_capabilities& caps, const CaseSpec& spec, const MemoryPlan& plan);
// The same, plus what this worker found out about its GPU.
std::string unsupported_reason(const CaseEnvironment& env, const CaseSpec& spec);

}  // namespace commbench
