// Scaling efficiency of a run measured at several world sizes (seed 004, issue 15 §2):
//   efficiency(N) = (throughput(N) / throughput(base)) / (N / base),  base = smallest world size
// with a result (for op cases the smallest of 2 or more: one rank communicates with no one). Weak scaling (each rank's size fixed): throughput = N x bytes per rank / time,
// so efficiency = time(base) / time(N). Workloads (docs/workloads.md): throughput = samples/s =
// batch × N / step time, weak (the batch per rank fixed) or strong (scaling = "strong": the global
// batch fixed, split among the ranks; the same formula, docs/workloads.md). Strong scaling (the job's total fixed): throughput =
// total / time, so efficiency = (time(base) / time(N)) x (base / N). docs/metrics.md.
// Built once here, rendered by the console, Markdown and summary.json reporters.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/scaling_mode.h"
#include "measure/case_record.h"

namespace commbench {

struct ScalingPoint {
  int world_size = 0;
  double time_us = 0;          // the record's mean time
  double throughput_gbps = 0;  // decimal GB/s, as defined above (0 for workloads)
  double samples_per_s = 0;    // workloads: batch × N / step time (their throughput)
  double efficiency = 0;       // 1 = perfect; at the base world size always 1
};

// One case (backend, op, dtype, redop, placement, memory, size) across world sizes.
struct ScalingSeries {
  int run_index = 0;
  std::string run, backend, op, dtype, redop, placement, memory;
  ScalingMode mode = ScalingMode::Weak;
  uint64_t bytes = 0;  // weak: per rank; strong: the job's total
  // Workload runs (op "data_parallel"): "resnet50 ddp overlap on"; batch_size is per rank (weak)
  // or the global batch (strong); their throughput is samples/s.
  std::string workload;
  int batch_size = 0;
  int base_world_size = 0;
  int repeats = 1;  // the run's repeats: with more than one, each point is its case's median repeat
  std::vector<ScalingPoint> points;  // ascending world size, measured ones only
};

// Series with at least two measured world sizes, in record order of first appearance. Only
// `ok` records with a positive time count; barrier and all_pairs (no size to scale / one record
// per pair) and the two-peer patterns (common/ops.h between_two_peers) are left out. `modes`: run
// index -> mode (default weak).
std::vector<ScalingSeries> scaling_series(const std::vector<CaseRecord>& records,
                                          const std::map<int, ScalingMode>& modes);

// run index -> mode, from the experiment as parsed (JobInfo::experiment_json).
std::map<int, ScalingMode> scaling_modes(const nlohmann::json& experiment_json);

// "weak scaling of 1 MiB per rank" / "strong scaling of 4 MiB in total", base stated.
std::string describe_scaling(const ScalingSeries& s);

}  // namespace commbench
