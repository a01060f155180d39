// What the agent does around executions to see inside a run (docs/observability.md): the
// telemetry sampler, the idle check and thermal warm-up before executions, the profiler around
// chosen ranks' workers, and metadata/rank<N>.json for the ranks this agent hosts. job_runner
// calls it at four points; everything it records ends up in summary.json's "observability".
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/execution_monitor.h"
#include "agent/worker_process.h"
#include "experiment/experiment.h"
#include "observe/telemetry_sampler.h"
#include "plan/plan.h"

namespace commbench {

class JobObservability {
 public:
  JobObservability(const Experiment& exp, std::filesystem::path job_dir, int agent_rank, std::string self_exe);
  ~JobObservability();

  // Before an execution's workers start: telemetry on/off as the run says, the idle check at a
  // run's first execution, the thermal warm-up. `stop` ends a warm-up early (interrupt).
  void before_execution(const Execution& exec, const RunSpec& run, const std::function<bool()>& stop);
  // Puts the run's profiler around rank `rank`'s worker when it is one of the chosen ranks.
  void wrap_worker(const Execution& exec, const RunSpec& run, int rank, WorkerLaunch& launch);
  // Adds the telemetry summary of a case (monitor_execution's CaseAnnotator); empty when off.
  CaseAnnotator annotator();
  // After an execution: profiler records into its metadata, metadata/rank<N>.json rewritten for
  // the ranks this agent ran.
  void after_execution(const Execution& exec, const std::vector<int>& ranks, ExecutionResult& res);
  // Stops the sampler; summary.json's "observability" (null when there is nothing to say).
  nlohmann::json finish();

 private:
  const Experiment& exp_;
  std::filesystem::path job_dir_;
  int agent_rank_ = 0;
  std::string self_exe_;
  std::string host_;
  nlohmann::json host_facts_;
  std::string build_id_, experiment_sha256_;
  std::unique_ptr<TelemetrySampler> sampler_;
  int64_t exec_started_ns_ = 0;
  double last_exec_end_ = -1;  // steady seconds, -1: none yet
  int last_run_checked_ = -1;
  nlohmann::json warmups_ = nlohmann::json::array();
  nlohmann::json idle_checks_ = nlohmann::json::array();
  std::map<int, nlohmann::json> profiled_;  // rank -> {command, output} of the current execution
  std::map<int, nlohmann::json> rank_files_;  // rank -> metadata/rank<N>.json content
  bool profiler_used_ = false;
};

}  // namespace commbench
