#include "cli/command_table.h"

#include <array>
#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/python_tools.h"
#include "cli/quick.h"

namespace commbench {
namespace {

int python_command(const char* name, const std::vector<std::string>& args) {
  std::vector<std::string> all{name};
  all.insert(all.end(), args.begin(), args.end());
  return run_python_tool(all, fmt::format("commbench {}", name));
}
int cmd_report(const std::vector<std::string>& a) { return python_command("report", a); }
int cmd_compare(const std::vector<std::string>& a) { return python_command("compare", a); }
int cmd_check(const std::vector<std::string>& a) { return python_command("check", a); }

const std::array kCommands{
    CliCommand{"run", "FILE", "run an experiment and write results", "file", cmd_run},
    CliCommand{"quick", "OPS", "run without a file, nccl-tests' flags (-b 8 -e 1G -f 2 -n 20 ...)", "op", cmd_quick},
    CliCommand{"validate", "FILE", "check an experiment file without running it", "file", cmd_validate},
    CliCommand{"plugins", "[NAME]", "list the backend plugins found and what they support", "plugin", cmd_plugins},
    CliCommand{"report", "DIR...", "plots, report.html, report.md and analysis.md of results folders", "dir", cmd_report, true},
    CliCommand{"compare", "BASELINE NEW", "per-case time and busbw ratios with a noise-aware verdict; exit 1 on a regression",
               "dir", cmd_compare, true},
    CliCommand{"check", "DIR", "the experiment's expectations (`expect`) against its results", "dir", cmd_check, true},
    CliCommand{"merge-trace", "DIR", "rebuild a job folder's trace.json (docs/observability.md)", "dir", cmd_merge_trace},
    CliCommand{"settings", "", "list every run setting with its type, default and meaning", "", cmd_settings},
    CliCommand{"conformance", "PLUGIN", "prove a backend plugin (file or name) follows the ABI before shipping it", "plugin",
               cmd_conformance},
};

}  // namespace

std::span<const CliCommand> cli_commands() { return kCommands; }

const CliCommand* find_cli_command(std::string_view name) {
  for (const CliCommand& c : kCommands)
    if (c.name == name) return &c;
  return nullptr;
}

std::string cli_usage(const std::string& docs_dir) {
  std::string s = "Usage: commbench <command> [options]\n\nCommands:\n";
  for (const CliCommand& c : kCommands) {
    const std::string head = c.args.empty() ? std::string(c.name) : fmt::format("{} {}", c.name, c.args);
    s += fmt::format("  {:<22}{}\n", head, c.summary);
  }
  s += fmt::format(
      "\n'commbench help <command>' or 'commbench <command> --help' describes each command.\n"
      "Documentation (configuration, outputs, metrics, launching, the plugin ABI): {}\n",
      docs_dir);
  return s;
}

std::vector<CliOption> cli_command_options(const CliCommand& command) {
  if (!command.python) return capture_options(command.run);
  // The Python commands describe their argparse options as JSON.
  std::vector<CliOption> out;
  const std::string json = python_tool_output({"__cli-spec"});
  const auto spec = nlohmann::json::parse(json, nullptr, false);
  if (!spec.is_object() || !spec.contains(std::string(command.name))) return out;
  for (const auto& o : spec[std::string(command.name)]) {
    CliOption c;
    c.long_name = o.value("long", "");
    c.short_name = o.value("short", "");
    c.help = o.value("help", "");
    c.takes_value = o.value("value", false);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace commbench
