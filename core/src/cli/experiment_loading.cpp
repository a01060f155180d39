#include "cli/experiment_loading.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <set>
#include <variant>

#include <fmt/format.h>

#include "experiment/capability_check.h"
#include "experiment/experiment_file.h"
#include "experiment/local_world_check.h"
#include "launch/host_limits.h"
#include "launch/rank_discovery.h"
#include "common/sha256.h"
#include "observe/profiler_command.h"
#include "plugin/probe.h"
#include "report/output_formats.h"
#include "plugin/search_path.h"

namespace commbench {
namespace {

// A local run (no launcher) starts every rank on this host; under a launcher each task is one rank.
bool starts_every_rank_here() {
  try {
    return discover_launch(current_environment()).agent_count == 1;
  } catch (const LaunchError&) {
    return false;  // `run` reports the environment; validation has nothing to add
  }
}

}  // namespace

constexpr const char* kStdinName = "<stdin>";

std::optional<LoadedExperiment> load_and_validate(const std::string& file,
                                                  const std::vector<std::string>& plugin_dirs,
                                                  const std::vector<std::string>& overrides) {
  const auto print = [](const std::vector<Diagnostic>& d) { print_diagnostics(std::cerr, d); };
  if (file != "-") return validate_parsed(parse_experiment_file(file, overrides), plugin_dirs, print);
  // "-": standard input, as most tools take it, named "<stdin>" in messages and records. As
  // "/dev/stdin" its messages named a device, relative plugin_path folders resolved under /dev,
  // and the recorded sha256 was of a second, empty read.
  auto text = read_experiment_file("/dev/stdin");
  if (auto* error = std::get_if<FileReadError>(&text)) {
    ParseResult failed;
    failed.diagnostics.push_back(Diagnostic{Diagnostic::Severity::Error, SourcePos{kStdinName, 0, 0},
                                            std::move(error->message)});
    return validate_parsed(std::move(failed), plugin_dirs, print);
  }
  const std::string& read = std::get<std::string>(text);
  ParseResult parsed = parse_experiment_string(read, kStdinName, overrides);
  if (parsed.experiment) parsed.experiment->text_sha256 = sha256_hex(read);  // "<stdin>" cannot be read again
  return validate_parsed(std::move(parsed), plugin_dirs, print);
}

std::optional<LoadedExperiment> validate_parsed(ParseResult parsed,
                                                const std::vector<std::string>& plugin_dirs,
                                                const DiagnosticPrinter& print) {
  print(parsed.diagnostics);
  if (!parsed.experiment) return std::nullopt;

  // The experiment's own plugin_path comes first: it is the most specific request.
  std::vector<std::string> extra = parsed.experiment->plugin_path;
  extra.insert(extra.end(), plugin_dirs.begin(), plugin_dirs.end());
  const auto dirs = search_dir_paths(default_search_path(extra));
  std::set<std::string> used;  // only these are probed (issue 17: a hanging plugin elsewhere costs nothing)
  // Each probed with the `env` of the first run that uses it, as its workers will load it: a
  // dependency found through LD_LIBRARY_PATH set there was "missing" to a probe without it.
  std::map<std::string, std::map<std::string, std::string>> probe_env;
  for (const RunSpec& run : parsed.experiment->runs)
    for (const std::string& b : run.backends)
      if (used.insert(b).second) probe_env[b] = run.env;
  LoadedExperiment out{std::move(*parsed.experiment),
                       discover_plugins(dirs, current_executable_path(), used, kDefaultProbeTimeout, probe_env)};

  auto diags = check_against_plugins(out.experiment, out.plugins);
  // A plugin folder that is not there is most likely a typo: the plugin then comes from
  // elsewhere on the search path (or not at all), which the user would not notice.
  for (const std::string& dir : extra) {
    std::error_code ec;
    const auto written = out.experiment.plugin_path_where.find(dir);  // -P folders have no place in the file
    if (!std::filesystem::is_directory(dir, ec))
      diags.push_back(Diagnostic{Diagnostic::Severity::Warning,
                                 written != out.experiment.plugin_path_where.end() ? written->second
                                                                                   : SourcePos{out.experiment.file, 0, 0},
                                 fmt::format("plugin folder '{}' ({}) is not a directory: no plugin is taken from it",
                                             dir, std::find(plugin_dirs.begin(), plugin_dirs.end(), dir) != plugin_dirs.end()
                                                      ? "-P" : "plugin_path")});
  }
  for (auto& d : check_profilers(out.experiment)) diags.push_back(std::move(d));
  for (auto& d : check_outputs(out.experiment)) diags.push_back(std::move(d));
  if (starts_every_rank_here())
    for (auto& d : check_local_worlds(out.experiment, read_host_limits())) diags.push_back(std::move(d));
  // In file order, as the parser's are (each check above adds its own in a run: a probe read
  // 8:36 before 6:27); those of the whole file (line 0) first.
  std::stable_sort(diags.begin(), diags.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return std::pair(a.pos.line, a.pos.column) < std::pair(b.pos.line, b.pos.column);
  });
  print(diags);
  if (has_errors(diags)) return std::nullopt;
  return out;
}

}  // namespace commbench
