// The subcommands of the `commbench` CLI. Each takes the arguments after its name and returns
// the process exit code (0 ok, 1 failures during the job, 2 invalid input, 130 interrupted).
#pragma once

#include <string>
#include <vector>

namespace commbench {

int cmd_run(const std::vector<std::string>& args);
int cmd_validate(const std::vector<std::string>& args);
int cmd_plugins(const std::vector<std::string>& args);
int cmd_conformance(const std::vector<std::string>& args);  // cli/conformance_command.cpp
int cmd_merge_trace(const std::vector<std::string>& args);
int cmd_settings(const std::vector<std::string>& args);

struct LoadedExperiment;
// What `run` does once the experiment is loaded: the job, then the report and the expectations
// (`report`, `expect`). `forced_launcher` as --launcher ("" = detect).
// `json`: print the job's summary.json on stdout at the end (console tables off), for scripts.
int run_experiment(const LoadedExperiment& loaded, const std::string& out_dir, bool quiet,
                   const std::string& forced_launcher, bool json = false);

}  // namespace commbench
