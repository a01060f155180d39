// What `run` and `validate` share: parse the file, find the plugins it names (in probe
// subprocesses), check it against their capabilities, and print every diagnostic.
#pragma once

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

// nullopt when there are errors (already printed to stderr, file:line:col first).
std::optional<LoadedExperiment> load_and_validate(const std::string& file,
                                                  const std::vector<std::string>& plugin_dirs);

}  // namespace commbench
