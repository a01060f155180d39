// How timed iterations are measured, as three independent choices (docs/metrics.md, "Methods"):
//  - MeasureMethod (run key `timing`, record field `method`): how the iterations are laid out in
//    time — back to back after one synchronisation (batch, nccl-tests' and OSU's method), one
//    synchronised start per iteration (per_iteration), or a CUDA graph of the iterations (graph).
//  - RankAggregation (run key `rank_aggregation`, record field `rank_aggregation`): how the
//    ranks' times become the record's one time.
//  - TimingMethod (run key `gpu_timing` for stream-ordered backends, record field `timing`): the
//    clock each time is read from. measure/iteration_clock.h says what each clock measures.
// One table per choice, used by the experiment file, the worker and the reports.
#pragma once

#include <optional>
#include <string_view>

namespace commbench {

// The clock (record field `timing`).
enum class TimingMethod { Host, CudaEvent, HostStreamSync };

inline std::string_view timing_name(TimingMethod m) {
  switch (m) {
    case TimingMethod::CudaEvent: return "cuda_event";
    case TimingMethod::HostStreamSync: return "host_stream_sync";
    default: return "host";
  }
}

inline std::optional<TimingMethod> parse_timing(std::string_view name) {
  for (TimingMethod m : {TimingMethod::Host, TimingMethod::CudaEvent, TimingMethod::HostStreamSync})
    if (timing_name(m) == name) return m;
  return std::nullopt;
}

// The former `gpu_timing = "cuda_event_batch"`: now timing = "batch" with gpu_timing = "cuda_event".
inline constexpr std::string_view kRetiredBatchClock = "cuda_event_batch";

// The layout of the timed iterations (record field `method`).
enum class MeasureMethod { Batch, PerIteration, Graph };

inline std::string_view method_name(MeasureMethod m) {
  switch (m) {
    case MeasureMethod::PerIteration: return "per_iteration";
    case MeasureMethod::Graph: return "graph";
    default: return "batch";
  }
}

inline std::optional<MeasureMethod> parse_method(std::string_view name) {
  for (MeasureMethod m : {MeasureMethod::Batch, MeasureMethod::PerIteration, MeasureMethod::Graph})
    if (method_name(m) == name) return m;
  return std::nullopt;
}

// Across ranks, for batch and graph (nccl-tests -a: 0 rank 0, 1 avg, 2 min, 3 max). per_iteration
// always takes the slowest rank of each iteration; the record then says "slowest_per_iteration".
enum class RankAggregation { Avg, Min, Max, Rank0 };

inline std::string_view aggregation_name(RankAggregation a) {
  switch (a) {
    case RankAggregation::Min: return "min";
    case RankAggregation::Max: return "max";
    case RankAggregation::Rank0: return "rank0";
    default: return "avg";
  }
}

inline std::optional<RankAggregation> parse_aggregation(std::string_view name) {
  for (RankAggregation a : {RankAggregation::Avg, RankAggregation::Min, RankAggregation::Max,
                            RankAggregation::Rank0})
    if (aggregation_name(a) == name) return a;
  return std::nullopt;
}

}  // namespace commbench
