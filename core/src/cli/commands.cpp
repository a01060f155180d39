#include "cli/commands.h"

#include <iostream>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "agent/job_runner.h"
#include "cli/experiment_loading.h"
#include "experiment/run_setting_table.h"
#include "plan/plan.h"
#include "plugin/catalog_format.h"
#include "plugin/probe.h"
#include "plugin/search_path.h"

namespace po = boost::program_options;

namespace commbench {
namespace {

struct Parsed {
  po::variables_map vm;
  bool help = false;
};

// Parses `args` against `desc` (+ one positional FILE when `file` is set). Throws po::error.
Parsed parse(const std::vector<std::string>& args, po::options_description& desc, bool file) {
  desc.add_options()("help,h", "show this help");
  po::positional_options_description pos;
  if (file) pos.add("file", 1);
  Parsed p;
  po::store(po::command_line_parser(args).options(desc).positional(pos).run(), p.vm);
  p.help = p.vm.count("help") > 0;
  if (!p.help) po::notify(p.vm);
  return p;
}

template <class F>
int guarded(const char* cmd, F&& body) {
  try {
    return body();
  } catch (const po::error& e) {
    std::cerr << fmt::format("commbench {}: {}\nTry 'commbench {} --help'.\n", cmd, e.what(), cmd);
    return kExitInvalid;
  }
}

}  // namespace

int cmd_run(const std::vector<std::string>& args) {
  return guarded("run", [&] {
    std::string file, out_dir;
    std::vector<std::string> plugin_dirs;
    po::options_description d("Usage: commbench run FILE [options]\n\n"
                              "Runs every [[run]] of the experiment FILE and writes a new folder of results.\n\nOptions");
    d.add_options()("file", po::value(&file), "experiment file (TOML)")(
        "output-dir,o", po::value(&out_dir), "write the job folder here instead of the file's output_dir")(
        "plugin-path,P", po::value(&plugin_dirs)->composing(), "extra plugin directory (repeatable)")(
        "quiet,q", "no console tables (files are still written)")(
        "dry-run", "validate and print the plan without running anything")(
        "launcher", po::value<std::string>(), "torchrun, slurm, openmpi, pmi or local (default: detect)")(
        "print-env", "print the launcher, rank and rendezvous this process detected, and why; run nothing");
    Parsed p = parse(args, d, true);
    if (p.help) {
      std::cout << d << "\n";
      return 0;
    }
    const std::string forced = p.vm.count("launcher") ? p.vm["launcher"].as<std::string>() : "";
    LaunchContext launch;
    try {
      launch = discover_launch(current_environment(), forced);
    } catch (const LaunchError& e) {
      std::cerr << "commbench run: " << e.what() << "\n";
      return kExitInvalid;
    }
    if (p.vm.count("print-env")) {
      std::cout << describe_launch(launch);
      return 0;
    }
    if (file.empty()) throw po::required_option("file");
    auto loaded = load_and_validate(file, plugin_dirs);
    if (!loaded) return kExitInvalid;
    if (p.vm.count("dry-run")) {
      for (const Execution& e : plan_job(loaded->experiment))
        std::cout << fmt::format("exec {}: run '{}' backend {} world {} — {} cases\n", e.index, e.run,
                                 e.backend, e.world_size, e.cases.size());
      return 0;
    }
    JobOptions opts;
    opts.output_dir = out_dir;
    opts.self_exe = current_executable_path();
    opts.quiet = p.vm.count("quiet") > 0;
    opts.launch = launch;
    try {
      return run_job(loaded->experiment, loaded->plugins, opts);
    } catch (const LaunchError& e) {
      std::cerr << fmt::format("commbench run (rank {} of {}, {}): {}\n", launch.agent_rank,
                               launch.agent_count, launch.launcher, e.what());
      return kExitFailures;
    }
  });
}

int cmd_validate(const std::vector<std::string>& args) {
  return guarded("validate", [&] {
    std::string file;
    std::vector<std::string> plugin_dirs;
    po::options_description d("Usage: commbench validate FILE [options]\n\n"
                              "Checks the experiment FILE (syntax, types, values, plugin capabilities)\n"
                              "without running anything. Exit code 0 if valid, 2 if not.\n\nOptions");
    d.add_options()("file", po::value(&file)->required(), "experiment file (TOML)")(
        "plugin-path,P", po::value(&plugin_dirs)->composing(), "extra plugin directory (repeatable)");
    Parsed p = parse(args, d, true);
    if (p.help) {
      std::cout << d << "\n";
      return 0;
    }
    auto loaded = load_and_validate(file, plugin_dirs);
    if (!loaded) return kExitInvalid;
    const auto plan = plan_job(loaded->experiment);
    size_t cases = 0;
    for (const auto& e : plan) cases += e.cases.size();
    std::cout << fmt::format("{}: valid — {} run(s), {} execution(s), {} case(s)\n", file,
                             loaded->experiment.runs.size(), plan.size(), cases);
    return 0;
  });
}

int cmd_plugins(const std::vector<std::string>& args) {
  return guarded("plugins", [&] {
    std::vector<std::string> plugin_dirs;
    po::options_description d("Usage: commbench plugins [options]\n\n"
                              "Lists the backend plugins on the search path with their version, ABI version\n"
                              "and capabilities. Plugins are inspected in a subprocess and never initialised.\n\nOptions");
    d.add_options()("plugin-path,P", po::value(&plugin_dirs)->composing(), "extra plugin directory (repeatable)")(
        "json", "print JSON instead of text");
    Parsed p = parse(args, d, false);
    if (p.help) {
      std::cout << d << "\n";
      return 0;
    }
    const PluginListing listing = list_plugins(default_search_path(plugin_dirs), current_executable_path());
    if (p.vm.count("json"))
      std::cout << plugin_listing_json(listing).dump(2) << "\n";
    else
      std::cout << format_plugin_listing(listing);
    return 0;
  });
}

int cmd_settings(const std::vector<std::string>& args) {
  return guarded("settings", [&] {
    po::options_description d("Usage: commbench settings\n\n"
                              "Prints every key a [[run]] or [defaults] table accepts, with its type, default\n"
                              "and meaning, as the Markdown table of docs/configuration.md.\n\nOptions");
    Parsed p = parse(args, d, false);
    if (p.help) {
      std::cout << d << "\n";
      return 0;
    }
    std::cout << run_keys_markdown();
    return 0;
  });
}

}  // namespace commbench
