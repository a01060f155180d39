#include "experiment/option_check.h"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "experiment/did_you_mean.h"

namespace commbench {

namespace {

// A plugin that chooses its GPU itself (an option `device`, as nccl and ncclx have) never sees
// the run's `device`, which places the core's buffers: the two would differ and the backend
// fail with an error about streams of another GPU. Said before anything runs.
void check_device_reaches(const RunSpec& run, const std::string& backend, const PluginInfo& plugin,
                          std::vector<Diagnostic>& out) {
  if (!run.device || run.memory != CB_MEM_CUDA || !plugin.options) return;
  const bool takes_device = std::any_of(plugin.options->begin(), plugin.options->end(),
                                        [](const PluginOption& o) { return o.name == "device"; });
  if (!takes_device) return;
  const auto given = run.options.find(backend);
  const std::string mine = fmt::format("{}", *run.device);
  if (given != run.options.end())
    if (const auto it = given->second.find("device"); it != given->second.end()) {
      if (it->second != mine)
        out.push_back(Diagnostic{Diagnostic::Severity::Error, run.pos_of("device"),
                                 fmt::format("device = {} but options.{}.device = {}: the core's buffers and the "
                                             "backend would be on different GPUs; give both the same GPU",
                                             mine, backend, it->second)});
      return;
    }
  out.push_back(Diagnostic{Diagnostic::Severity::Error, run.pos_of("device"),
                           fmt::format("device = {} does not reach backend '{}', which chooses its GPU by its own "
                                       "option: add options.{}.device = {} (the buffers would be on GPU {}, the "
                                       "backend on another)",
                                       mine, backend, backend, mine, mine)});
}

}  // namespace

void check_backend_options(const RunSpec& run, const std::string& backend, const PluginInfo& plugin,
                           std::vector<Diagnostic>& out) {
  check_device_reaches(run, backend, plugin, out);
  const auto given = run.options.find(backend);
  if (given == run.options.end() || given->second.empty()) return;
  const std::string table = "options." + backend;
  auto add = [&](Diagnostic::Severity severity, const std::string& key, std::string message) {
    out.push_back(Diagnostic{severity, run.pos_of(key), std::move(message)});
  };
  if (!plugin.options) {
    add(Diagnostic::Severity::Note, table,
        fmt::format("plugin '{}' does not describe its options (its table has no ABI 1.2 option descriptors), so "
                    "they are not checked here; its workers check them when they start",
                    backend));
    return;
  }
  if (!plugin.option_problems.empty()) {
    add(Diagnostic::Severity::Warning, table,
        fmt::format("plugin '{}' describes its options wrongly ({}), so they are not checked here; "
                    "'commbench conformance {}' lists every problem",
                    backend, plugin.option_problems.front(), backend));
    return;
  }
  std::vector<std::string_view> names;
  for (const auto& o : *plugin.options) names.push_back(o.name);
  for (const auto& [key, value] : given->second) {
    const std::string at = table + "." + key;
    const PluginOption* option = nullptr;
    for (const auto& o : *plugin.options)
      if (o.name == key) option = &o;
    if (option == nullptr) {
      const std::string hint = did_you_mean(key, names);
      add(Diagnostic::Severity::Error, at + "#key",
          fmt::format("unknown option '{}' for backend '{}'{} options are: {} ('commbench plugins {}' describes "
                      "them)",
                      key, backend, hint.empty() ? "; its" : hint + " Its",
                      names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", ")), backend));
      continue;
    }
    if (const std::string expected = option->check_value(value); !expected.empty())
      add(Diagnostic::Severity::Error, at,
          fmt::format("option {} = \"{}\" for backend '{}' is not valid: expected {}", key, value, backend, expected));
  }
}

}  // namespace commbench
