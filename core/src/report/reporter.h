// Reporters turn events of a job into outputs (console, results.jsonl, results.csv,
// summary.json, summary.md). One interface, many implementations, like google/benchmark's.
// The agent calls them in this order:
//   job_started, { execution_started, (case_done | transfers_logged)*, execution_done }*,
//   run_done per [[run]], job_done
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiment/experiment.h"
#include "measure/all_pairs.h"
#include "measure/case_record.h"
#include "observe/host_load.h"

namespace commbench {

struct JobInfo {
  std::string experiment;      // name
  std::string file;            // experiment file
  std::string output_dir;      // this job's folder (already created)
  std::string started_at;      // ISO 8601 local time with offset
  std::string host;            // hostname
  std::string commbench_version;
  nlohmann::json experiment_json;  // Experiment::as_parsed
  nlohmann::json plugins;          // name -> PluginInfo json for the backends used
  nlohmann::json environment;      // launcher, clock resolution, ...
  // The plan's size, for reserving the summaries' disk space at the start (output_file.h).
  int planned_records = 0;          // records the whole job is to produce
  int max_samples_per_record = 0;   // iterations, or max_iterations with min_time
};

// One execution = one [[run]] x one backend x one world size, in fresh worker processes.
struct ExecutionInfo {
  int run_index = 0;
  std::string run;
  std::string backend;
  int world_size = 0;
  int exec_index = 0;  // 0-based among all executions of the job
  int exec_total = 0;
  int case_total = 0;  // cases this execution will measure
  int repeat = 0;      // which of the run's `repeats` (0-based)
  int repeats = 1;
  double timeout_s = 0;  // the execution's wall-clock limit: the run's `timeout`, or sized to its cases
  HostLoad host_load;  // this host just before the workers started (observe/host_load.h)
};

struct ExecutionOutcome {
  ExecutionInfo info;
  std::string status = "ok";  // "ok" | "failed" | "unavailable" | "interrupted"
  std::string reason;         // for failures: rank, signal/exit code/timeout, phase
  int failed_rank = -1;
  // What the agent decided by, as data (common/failure_kind.h): "" when ok; else the failed
  // rank's reported kind ("timeout", "internal", ...), or the agent's own "crash" / "timeout" /
  // "interrupted" / "unavailable". The phase the failed rank was in, and the plugin's cb_status
  // code when a plugin call failed (-1 otherwise).
  std::string failure_kind;
  std::string failed_phase;
  int plugin_status = -1;
  double elapsed_s = 0;
  int cases_done = 0;
  nlohmann::json metadata;    // backend/host facts reported by the workers
  nlohmann::json clock;       // each rank's clock against rank 0's (report/clock_alignment.h); null: none
};

// A record of another kind than a case (issue 15): `kind` "memory" (docs/output.md, "Memory
// records"); the body holds its identity (run, backend, world_size, ...) and its figures.
// results.jsonl writes it as {"type": kind, "schema_version": ..., <body>}.
struct KindRecord {
  std::string kind;
  nlohmann::ordered_json body;
};

struct JobResult {
  std::vector<CaseRecord> cases;
  std::vector<KindRecord> records;  // every kind other than "case", in arrival order
  std::vector<ExecutionOutcome> executions;
  std::string finished_at;
  int exit_code = 0;
  // The experiment sets `expect`: they are checked after the summary and can still turn exit
  // code 0 into 1, so the summary states the measurements' outcome, not a final exit code.
  bool expectations_follow = false;
  // Telemetry, thermal warm-ups, idle checks, profilers and the hosts' metadata digest
  // (docs/observability.md); null when none of them was asked for.
  nlohmann::json observability;
};

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void job_started(const JobInfo&) {}
  virtual void execution_started(const ExecutionInfo&) {}
  virtual void case_done(const CaseRecord&) {}
  virtual void record_done(const KindRecord&) {}
  // One repetition of an all_pairs sweep: its timed transfers in execution order.
  virtual void transfers_logged(const ExecutionInfo&, const std::vector<TransferLogEntry>&) {}
  virtual void execution_done(const ExecutionOutcome&) {}
  // All records of one [[run]] (every backend and world size): where comparisons are printed.
  virtual void run_done(const RunSpec&, const std::vector<CaseRecord>&) {}
  virtual void job_done(const JobResult&) {}
  // Case records this output has durably written, for the message of a failed job
  // (output_failures.h); -1 for outputs that keep no count.
  virtual long records_written() const { return -1; }
  // True for an output that job_done writes whole (through a temporary file and a rename): one
  // that found the disk full can be written again once the others gave their space back.
  virtual bool writes_whole_file_at_end() const { return false; }
};

}  // namespace commbench
