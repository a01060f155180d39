// The agent's main loop. Local mode: one agent hosts the bootstrap store on loopback and, for
// each execution of the plan, starts world_size fresh workers, monitors them and reports. Under
// a launcher: one agent per task, each starting the worker of its own rank (agent_group.h).
// The agent never loads a plugin and never touches a device (design/process-model.md).
#pragma once

#include <string>

#include "common/exit_codes.h"
#include "experiment/experiment.h"
#include "launch/rank_discovery.h"
#include "plugin/plugin_info.h"

namespace commbench {

struct JobOptions {
  std::string output_dir;  // overrides the experiment's output_dir when non-empty
  std::string self_exe;    // this binary, for the workers
  bool quiet = false;      // no console tables (files are still written)
  LaunchContext launch;    // who this agent is (discover_launch); default: local mode
  // Set by agent 0 to the job folder it wrote, for what runs after the job (report, checks).
  std::string* job_dir_out = nullptr;
};

// Runs the whole job; returns the process exit code.
int run_job(const Experiment& exp, const PluginCatalog& plugins, const JobOptions& opts);

// A task of a multi-task launch that stops before its job starts (`why`: its experiment did not
// validate here): tells rank 0 (AgentGroup::leave_before_joining), which then ends the job at
// once with exit 2, naming it. False at once for rank 0 and for a local run, and when rank 0's
// store could not be reached.
bool tell_rank0_before_joining(const LaunchContext& launch, const std::string& why);

}  // namespace commbench
