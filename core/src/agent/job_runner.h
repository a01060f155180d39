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

}  // namespace commbench
