// Expands an experiment into executions (one [[run]] x one backend x one world size, each in
// fresh worker processes) and each execution into cases (op x dtype x redop x placement x size).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commbench/backend.h"
#include "common/ops.h"
#include "common/timing_method.h"
#include "experiment/experiment.h"

namespace commbench {

struct CaseSpec {
  OpKind op = OpKind::Allreduce;
  uint64_t bytes = 0;  // per-rank message size = count * dtype size
  uint64_t count = 0;  // elements, ABI count semantics
  cb_dtype dtype = CB_DTYPE_F32;
  std::optional<cb_redop> redop;  // reductions only
  Placement placement = Placement::OutOfPlace;
  int root = 0;
  uint64_t job_bytes = 0;  // strong scaling: the job-wide size of the run's `sizes` this is a share of; 0: weak
};

// Everything a worker needs, serialised to JSON on its stdin: the run's settings (timeout_s
// sized for this execution when the run sets none) and what the planner chose.
struct Execution : RunSettings {
  int index = 0;  // among all executions of the job
  int run_index = 0;
  int repeat = 0;  // 0-based, < repeats
  std::string run;
  std::string experiment;
  std::string backend;
  int world_size = 0;
  uint64_t seed = 0;
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> options;  // this backend's options
  std::vector<CaseSpec> cases;            // empty for a workload run
  cb_dtype workload_dtype = CB_DTYPE_F32;  // workload runs: the run's first dtype
};

std::vector<Execution> plan_job(const Experiment& exp);

// The dtype a case's records and reports name: "" for an op that moves no data (barrier), whose
// plan entry carries uint8 only because the ABI's args need some dtype.
std::string case_dtype_name(const CaseSpec& c);

// "allreduce 1024 B f32 sum out_of_place", "barrier 0 B": a case in progress messages and
// trace/NVTX range names.
std::string describe_case(const CaseSpec& c);

// An execution's time limit when the run sets none: 10 minutes for start-up and teardown plus
// what its cases should take at a pessimistic 50 MB/s per rank (docs/configuration.md).
double default_timeout_s(const RunSpec& run, int world, const std::vector<CaseSpec>& cases);

// Records an execution produces: one per case, except all_pairs, one per directed pair per size.
int expected_records(const Execution& exec);

void to_json(nlohmann::json& j, const Execution& e);
void from_json(const nlohmann::json& j, Execution& e);

}  // namespace commbench
