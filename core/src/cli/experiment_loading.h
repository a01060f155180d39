// What `run` and `validate` share: parse the file, find the plugins it names (in probe
// subprocesses), check it against their capabilities, and print every diagnostic.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "experiment/experiment.h"
#include "plugin/plugin_info.h"

namespace commbench {

struct LoadedExperiment {
  Experiment experiment;
  PluginCatalog plugins;
};

// How diagnostics are shown: print_diagnostics to stderr for files; `commbench quick` names the
// flag that wrote the line instead.
using DiagnosticPrinter = std::function<void(const std::vector<Diagnostic>&)>;

// The plugin half of load_and_validate, for an experiment parsed from text.
std::optional<LoadedExperiment> validate_parsed(ParseResult parsed,
                                                const std::vector<std::string>& plugin_dirs,
                                                const DiagnosticPrinter& print);

// nullopt when there are errors (already printed to stderr, file:line:col first).
std::optional<LoadedExperiment> load_and_validate(const std::string& file,
                                                  const std::vector<std::string>& plugin_dirs);

}  // namespace commbench
