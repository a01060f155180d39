// One measured case (or one that was skipped or failed): the unit every reporter consumes and
// every line of results.jsonl holds. docs/output.md documents the fields; bump kSchemaVersion
// on any incompatible change.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "stats/summary.h"

namespace commbench {

// 2: `method` and `rank_aggregation` added, `time_us` follows the method (batch by default: ranks
// averaged, no per-iteration barrier), `timing` is the clock only (cuda_event_batch retired).
inline constexpr int kResultsSchemaVersion = 2;

// The checked iterations of a case (docs/metrics.md, "Correctness checks").
enum class CheckStage : int32_t {
  FirstIteration = 0,  // the first post, before the warm-up
  AfterTiming = 1,     // one more iteration after the timed ones, outside the timed region
};
std::string_view check_stage_name(CheckStage s);

// The first element found wrong (lowest rank, then the earlier check, then the lowest index).
struct WrongElement {
  int rank = -1;
  uint64_t index = 0;     // element of that rank's receive buffer
  double expected = 0;
  double got = 0;         // NaN (JSON null) when the element still held the poison
  std::string check;      // check_stage_name
  // check_buffer_name: "recv" (absent in JSON), "past_recv_end" / "past_send_end" (the backend
  // wrote past a buffer's end; index counts from the end, got is the first changed byte),
  // "before_recv_start" / "before_send_start" (before its start; index counts back from it) or
  // "send" (an out-of-place send buffer changed).
  std::string buffer = "recv";
};

struct CaseRecord {
  // identity
  std::string experiment;
  std::string run;       // run name
  int run_index = 0;
  int repeat = 0;        // which of the run's `repeats` (0-based)
  std::string backend;
  int world_size = 0;
  std::string op;        // "allreduce", "pingpong", ...
  uint64_t bytes = 0;    // per-rank message size (count * dtype size)
  uint64_t total_bytes = 0;  // the size nccl-tests prints: n * bytes for allgather, reducescatter,
                             // alltoall, gather, scatter; bytes otherwise (stats/bandwidth.h)
  uint64_t count = 0;    // elements per rank (ABI count semantics)
  uint64_t job_bytes = 0;  // scaling = "strong": the job-wide size the run's `sizes` named, of which
                           // `bytes` is this rank's share; 0 (absent) for weak scaling
  std::string dtype;     // "f32", ...
  std::string redop;     // "" for non-reductions
  std::string placement; // "out_of_place" | "in_place"
  std::string memory;    // "host" | "host_pinned" | "cuda"
  int root = 0;
  int src = -1;          // all_pairs: the sending rank; -1 for every other op
  int dst = -1;          // all_pairs: the receiving rank; -1 for every other op
  // What else the run set that changes what is measured, so that two runs of one job that
  // differ only there are two cases, never two repeats of one (compare matches on them):
  std::vector<int> peers;  // pingpong, unidir_bw, bidir_bw: the two ranks; empty (absent) otherwise
  int window = 0;          // unidir_bw, bidir_bw, msg_rate: messages in flight; 0 (absent) otherwise
  std::map<std::string, std::string> options;  // the run's options for this backend; absent when none
  std::map<std::string, std::string> env;      // the run's `env`; absent when none

  // outcome
  std::string status = "ok";  // "ok" | "unsupported" | "failed"
  std::string reason;         // why, when not ok
  // A case its execution broke in (agent/broken_case.h): the execution's failure_kind (crash,
  // timeout, internal, ...), as data; "" (absent in JSON) for every other record, a wrong
  // result's `failed` included.
  std::string failure_kind;
  std::string method = "batch";  // batch | per_iteration | graph (common/timing_method.h)
  std::string rank_aggregation;  // avg | min | max | rank<N> | slowest_per_iteration | sender_to_arrival
  std::string timing = "host";  // the clock (measure/iteration_clock.h): host | cuda_event | host_stream_sync
  std::string staging;          // "host_pinned": device data copied through pinned host buffers
                                // inside the timed region; "" (absent in JSON): no staging
  bool oversubscribe_gpu = false;  // the run let local ranks share a GPU: correctness only, the
                                   // times are not a performance number (absent in JSON when false)
  std::string cpu_binding;  // "core" | "numa": the agent bound each rank (run setting
                            // `cpu_binding`); "" (absent in JSON): not bound by commbench
  int warmup = 0;
  int iterations = 0;
  SampleSummary time_us;      // over samples_us
  double algbw_gbps = 0;      // from time_us.mean
  double busbw_gbps = 0;
  double msg_rate_mps = 0;    // windowed p2p patterns: millions of messages per second; else 0
  double host_us_per_op = 0;  // batch on CUDA events: rank 0's host time to enqueue one iteration
                              // (the op and its event), µs; 0 (absent in JSON): not measured
  // The most page faults any rank's measuring thread took inside its timed loops
  // (measure/page_faults.h). -1 (absent in JSON): not measured: unsupported or skipped cases,
  // all_pairs and workload records, or a rank that could not read its count.
  int64_t timed_page_faults = -1;
  int64_t wrong = -1;         // mismatched elements over all ranks (per rank, the larger of
                              // its two checked iterations); -1 = not checked; > 0 = "failed"
  std::optional<WrongElement> first_wrong;  // absent when nothing was wrong
  // The agent's telemetry over the case's window (observe/telemetry_sampler.h); null when off.
  nlohmann::json telemetry;
  // workload = "data_parallel" (op "data_parallel"): the step's figures (docs/workloads.md,
  // docs/output.md); null, and absent from the JSON, for op cases.
  nlohmann::json workload;
  double target_cv = 0;       // the run's target_cv; 0 = none (then cv_reached is not written)
  bool cv_reached = false;    // time_us.cv < target_cv when the case stopped repeating
  std::vector<double> rank_mean_us;  // each rank's own mean, to find stragglers
  std::vector<double> samples_us;    // per iteration, ranks aggregated as rank_aggregation says, in order
};

void to_json(nlohmann::json& j, const CaseRecord& r);
// Same fields in declaration order (identity, outcome, arrays last), for files people read.
void to_json(nlohmann::ordered_json& j, const CaseRecord& r);
void from_json(const nlohmann::json& j, CaseRecord& r);

}  // namespace commbench
