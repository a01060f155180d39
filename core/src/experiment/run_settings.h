// The run settings that travel unchanged from the experiment file to the workers, each defined
// once in one table (run_setting_table.h; the rows are in run_settings.cpp). A row gives the
// TOML key, its check and error messages, the built-in default, the layering ([[run]] over
// [defaults]), the JSON of `as_parsed` and of the execution sent to the workers, and the row of
// the run-key table in docs/configuration.md.
// Adding a setting: a member here, a row in the table, and the code that uses it
// (docs/architecture.md, "How to add a run setting").
//
// The axes a run is expanded along (backends, ops, sizes, dtypes, redops, placement,
// world_sizes) and the merged tables (env, options) are read by the layer reader itself; they
// are listed beside the table (structural_run_keys()) for the docs and the unknown-key check.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "commbench/backend.h"
#include "common/cpu_binding_mode.h"
#include "common/diagnostic.h"
#include "common/ops.h"
#include "common/scaling_mode.h"
#include "common/timing_method.h"
#include "experiment/observe_settings.h"
#include "workload/memory_estimate.h"
#include "workload/model.h"
#include "workload/workload_kind.h"

namespace commbench {

// One entry of a run's `expect` (experiment/expect_field.h): conditions every case in its scope
// must meet, checked after the job (python/commbench/expect.py).
struct Expectation {
  SourcePos pos;
  std::vector<OpKind> ops;  // empty: every op of the run
  std::optional<uint64_t> min_bytes, max_bytes;
  // metric -> condition, normalised to "<op> <number>" (">= 180"), in file order.
  std::vector<std::pair<std::string, std::string>> conditions;
};

struct RunSettings {
  cb_mem memory = CB_MEM_HOST;
  int warmup = 5;
  int iterations = 20;        // timed iterations per case (a minimum when min_time_s > 0)
  int repeats = 1;            // executions of every case, in rounds, each in fresh processes
  double min_time_s = 0;      // > 0: run each case at least this long
  int max_iterations = 100000;
  bool check = true;
  // Allow more local ranks than the host can run at once (launch/host_limits.h): off, a world
  // that would overload this host's CPUs is refused at validation.
  bool oversubscribe = false;
  CpuBinding cpu_binding = CpuBinding::None;  // the agent binds each local rank it starts
  double timeout_s = 600;     // wall-clock limit of one execution (plan.h sizes it when unset)
  int root = 0;               // rooted collectives
  int window = 64;            // unidir_bw, bidir_bw, msg_rate: messages in flight
  std::vector<int> peers{0, 1};  // pingpong / unidir_bw / bidir_bw: the two ranks
  std::optional<int> device;     // memory = "cuda": GPU index for every rank (else by local rank)
  bool oversubscribe_gpu = false;  // memory = "cuda": local ranks may share a GPU (correctness only)
  TimingMethod gpu_timing = TimingMethod::CudaEvent;  // stream-ordered backends: the clock
  MeasureMethod method = MeasureMethod::Batch;        // key `method`, formerly `timing` (docs/metrics.md, "Methods")
  RankAggregation rank_aggregation = RankAggregation::Avg;  // batch and graph
  double target_cv = 0;       // > 0: repeat a case in rounds until its CV is below this (fraction)
  double max_time_s = 10;     // with target_cv: no new round after this long
  ScalingMode scaling = ScalingMode::Weak;  // what `sizes` mean across world sizes
  bool trace = false;  // per-rank Chrome traces, merged into trace.json (docs/observability.md)
  std::vector<Expectation> expect;  // none by default
  workload::Optimizer optimizer = workload::Optimizer::Adam;  // memory estimate (docs/workloads.md)
  // Read by the agent, not the workers (docs/observability.md, observe_settings.h).
  double telemetry_s = 0;                       // the sampler's interval; 0: off
  std::optional<ThermalWarmup> thermal_warmup;  // unset: no warm-up
  std::optional<ProfilerSetting> profiler;      // unset: workers run unwrapped
  // workload = "data_parallel" (docs/workloads.md): DDP/FSDP steps instead of op cases.
  WorkloadKind workload = WorkloadKind::None;
  std::optional<workload::Model> model;  // required with a workload
  int batch_size = 32;                   // samples per rank per step
  std::vector<int> batch_sizes;          // workload = "memory": measured each; empty = {batch_size}
  uint64_t bucket_bytes = 25ull << 20;   // DDP gradient bucket cap (torch's bucket_cap_mb = 25)
  Sharding sharding = Sharding::Ddp;
  std::vector<bool> overlap{true, false};  // one record per value
  int steps = 10;                          // timed steps per case (warm-up steps: `warmup`)
  double compute_ms = 0;                   // compute = "time": per step, forward + backward
  ComputeSource compute = ComputeSource::Time;
};

// Every setting of `s` into `j`, under the JSON keys.
void settings_to_json(const RunSettings& s, nlohmann::json& j);
// The inverse; a missing key keeps the built-in default (records written by older versions).
void settings_from_json(const nlohmann::json& j, RunSettings& s);

}  // namespace commbench
