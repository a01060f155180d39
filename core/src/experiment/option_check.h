// Checks a run's backend options ([run.options.<backend>]) against the options the plugin
// describes (ABI 1.2 descriptors), before anything runs: an unknown key or a badly typed value is
// an error at the key. A plugin that describes none gets a note: its init() is the only judge.
#pragma once

#include <string>
#include <vector>

#include "common/diagnostic.h"
#include "experiment/experiment.h"
#include "plugin/plugin_info.h"

namespace commbench {

void check_backend_options(const RunSpec& run, const std::string& backend, const PluginInfo& plugin,
                           std::vector<Diagnostic>& out);

}  // namespace commbench
