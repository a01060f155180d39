// The `profiler` run setting turned into the command line that wraps a worker: perf, nsys, ncu,
// or a user's template (docs/observability.md, "Profilers"). Placeholders in templates:
// {output} (the output path without extension, next to the rank's log), {rank}, and {command}
// (the worker's own command line; appended at the end when the template does not place it).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/diagnostic.h"
#include "experiment/experiment.h"

namespace commbench {

// The program the setting runs ("perf", or a template's first word).
std::string profiler_program(const ProfilerSetting& p);
// Full path of `program` (as given when it has a '/', else searched on PATH); "" when not found
// or not executable.
std::string find_program(const std::string& program);
// Why the profiler cannot run here (its program is missing), with what to do; nullopt when it can.
std::optional<std::string> profiler_problem(const ProfilerSetting& p);
// Errors at each run's `profiler` key for programs that are not installed (`validate` and `run`
// report them before anything starts).
std::vector<Diagnostic> check_profilers(const Experiment& exp);

// The wrapped command line: the profiler's argv with the worker's argv inside.
std::vector<std::string> profiler_argv(const ProfilerSetting& p, const std::string& output, int rank,
                                       const std::vector<std::string>& worker_argv);
// A command line as a shell would take it (for the record and the log).
std::string shell_quote_join(const std::vector<std::string>& argv);

}  // namespace commbench
