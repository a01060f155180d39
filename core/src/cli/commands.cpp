#include "cli/commands.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include <boost/program_options.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "agent/early_leave.h"
#include "agent/job_runner.h"
#include "bootstrap/store.h"
#include "cli/cli_spec.h"
#include "cli/experiment_loading.h"
#include "cli/python_tools.h"
#include "common/output_placeholders.h"
#include "experiment/did_you_mean.h"
#include "experiment/run_setting_table.h"
#include "plan/plan.h"
#include "plugin/catalog_format.h"
#include "plugin/probe.h"
#include "plugin/search_path.h"

namespace po = boost::program_options;

namespace commbench {
namespace {

struct ParsedArgs {
  po::variables_map vm;
  bool help = false;
};

// Parses `args` against `desc` (+ one positional FILE when `file` is set). Throws po::error.
ParsedArgs parse(const std::vector<std::string>& args, po::options_description& desc, bool file) {
  desc.add_options()("help,h", "show this help");
  offer_options(desc);
  po::positional_options_description pos;
  if (file) pos.add("file", 1);
  ParsedArgs p;
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

// -o of run and quick alike, checked before anything runs (and by --dry-run): no unknown
// placeholder ("{gpu}" would name a folder literally).
bool out_dir_flag_ok(const std::string& out_dir) {
  if (auto bad = unknown_placeholder(out_dir)) {
    std::cerr << fmt::format("commbench run: -o {}: '{}' is not a placeholder; the one there is {} (the GPU, "
                             "driver and CUDA version)\n", out_dir, *bad, kHardwarePlaceholder);
    return false;
  }
  return true;
}

// --dry-run creates nothing, but says what the run would refuse at once (exit 2): an output folder
// that cannot be made (a file on the way, a folder that does not take writes). The part before a
// placeholder is what can be checked without the hardware's name.
std::string output_folder_problem(const std::string& dir) {
  namespace fs = std::filesystem;
  fs::path p(dir.substr(0, dir.find('{')));
  std::error_code ec;
  while (!p.empty() && !fs::exists(fs::symlink_status(p, ec)) && p.has_parent_path() && p != p.parent_path())
    p = p.parent_path();
  if (p.empty() || !fs::exists(p, ec)) p = ".";
  if (!fs::is_directory(p, ec)) return fmt::format("{} is not a folder", p.string());
  if (::access(p.c_str(), W_OK | X_OK) != 0) return fmt::format("{}: {}", p.string(), std::strerror(errno));
  return "";
}

bool has_expectations(const Experiment& exp) {
  for (const RunSpec& r : exp.runs)
    if (!r.expect.empty()) return true;
  return false;
}

// `report = true` and `expect`: run by the Python package on the finished job folder (agent 0
// only: it is the one that wrote it). The analysis lands at the end of the console summary.
// A missed expectation turns exit code 0 into 1; an interrupted or unwritable job is left alone.
int after_job(const Experiment& exp, const std::string& job_dir, int code, bool quiet) {
  const bool expect = has_expectations(exp);
  if (job_dir.empty() || (!exp.report && !expect)) return code;
  if (code != kExitOk && code != kExitFailures) return code;
  std::vector<std::string> args{"after-run", job_dir};
  if (exp.report) args.push_back("--report");
  if (quiet) args.push_back("--quiet");
  bool interrupted = false;
  const int rc = run_python_tool(args, "commbench run", &interrupted);
  // The console summary left the exit code to the expectations: this line is the final one.
  if (expect && rc == kExitOk) {
    if (!quiet)
      std::cout << (code == kExitOk ? "# Exit code 0: every execution completed, every check passed and every "
                                      "expectation was met\n"
                                    : "# Exit code 1: failures above; the expectations were met\n");
    return code;
  }
  if (rc == kExitOk) return code;
  if (interrupted) {  // a signal to commbench stopped it: the job's results are complete, the report is not
    std::cerr << "# interrupted while writing the report" << (expect ? " and checking the expectations" : "")
              << "; the results are complete: 'commbench report " << job_dir << "' writes it again"
              << (expect ? ", 'commbench check " + job_dir + "' checks them" : std::string()) << "\n";
    return kExitInterrupted;
  }
  if (expect) {
    std::cout.flush();
    std::cerr << (rc == kExitFailures
                      ? "# Exit code 1: expectations missed (listed above)\n"
                      : "# Exit code 1: the expectations could not be checked (see above); "
                        "'commbench check " + job_dir + "' checks them again\n");
    return kExitFailures;
  }
  std::cerr << "# the report could not be written (see above); the results are complete: "
               "'commbench report " << job_dir << "' tries again\n";
  return code;
}

// --only: keeps the named runs (file order); an unknown name is an error listing the names.
// run's and validate's --set and --only: what is validated is what would run.
constexpr const char* kSetHelp =
    "KEY=VALUE: override a key of the file, e.g. run.iterations=100, defaults.world_sizes=[2,4] (repeatable)";
constexpr const char* kOnlyHelp = "only the [[run]] of this name (repeatable, or comma-separated)";

bool select_runs(LoadedExperiment& loaded, const std::vector<std::string>& only, const char* command) {
  if (only.empty()) return true;
  std::vector<std::string> names;
  for (const RunSpec& r : loaded.experiment.runs) names.push_back(r.name);
  std::set<std::string> wanted;
  for (const auto& o : only) {
    // A value that is a run's whole name picks it, commas and all; otherwise a comma list.
    if (std::find(names.begin(), names.end(), o) != names.end()) {
      wanted.insert(o);
      continue;
    }
    std::string cur;
    for (char c : o + ",") {
      if (c != ',') {
        cur += c;
        continue;
      }
      if (cur.empty()) {
        // An empty name would select nothing and the job would "pass" having measured nothing.
        std::cerr << fmt::format("commbench {}: --only '{}': an empty run name; give the names of runs to keep "
                                 "(the file has: {})\n", command, o, fmt::join(names, ", "));
        return false;
      }
      wanted.insert(cur);
      cur.clear();
    }
  }
  for (const auto& w : wanted)
    if (std::find(names.begin(), names.end(), w) == names.end()) {
      std::cerr << fmt::format("commbench {}: --only {}: no [[run]] of that name; the file has: {}\n",
                               command, w, fmt::join(names, ", "));
      return false;
    }
  std::vector<RunSpec> kept;
  nlohmann::json kept_json = nlohmann::json::array();
  for (size_t i = 0; i < loaded.experiment.runs.size(); ++i)
    if (wanted.count(loaded.experiment.runs[i].name)) {
      kept.push_back(loaded.experiment.runs[i]);
      kept_json.push_back(loaded.experiment.as_parsed["runs"][i]);
    }
  loaded.experiment.runs = std::move(kept);
  loaded.experiment.as_parsed["runs"] = std::move(kept_json);
  loaded.experiment.as_parsed["only"] = std::vector<std::string>(wanted.begin(), wanted.end());
  return true;
}

}  // namespace

int cmd_run(const std::vector<std::string>& args) {
  return guarded("run", [&] {
    std::string file, out_dir;
    std::vector<std::string> plugin_dirs, sets, only;
    po::options_description d("Usage: commbench run FILE [options]\n\n"
                              "Runs every [[run]] of the experiment FILE and writes a new folder of results.\n\nOptions");
    d.add_options()("file", po::value(&file), "experiment file (TOML)")(
        "output-dir,o", po::value(&out_dir), "write the job folder here instead of the file's output_dir")(
        "plugin-path,P", po::value(&plugin_dirs)->composing(), "extra plugin directory (repeatable)")(
        "set", po::value(&sets)->composing(), kSetHelp)("only", po::value(&only)->composing(), kOnlyHelp)(
        "quiet,q", "nothing on stdout: no tables, no results folder (files are still written; errors and "
        "missed expectations go to stderr)")(
        "json", "print the job's summary.json on stdout when it ends (implies --quiet), for scripts; with --dry-run, the plan as JSON")(
        "dry-run", "validate and print the plan without running anything")(
        "launcher", po::value<std::string>(), "torchrun, slurm, openmpi, pmi or local (default: detect)")(
        "print-env", "print the launcher, rank and rendezvous this process detected, and why; run nothing");
    ParsedArgs p = parse(args, d, true);
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
    if (p.vm.count("output-dir") && out_dir.empty()) {
      std::cerr << "commbench run: -o '': an empty folder name; leave -o out to use the file's output_dir "
                   "(default results)\n";
      return kExitInvalid;
    }
    if (!out_dir_flag_ok(out_dir)) return kExitInvalid;
    auto loaded = load_and_validate(file, plugin_dirs, sets);
    if (!loaded || !select_runs(*loaded, only, "run")) {
      // One task's file may differ from the others' (not on a shared file system, edited between
      // starts): rank 0 hears of it at once instead of waiting out the rendezvous for this task.
      if (launch.agent_count > 1 && launch.agent_rank != 0) {
        const bool told = tell_rank0_before_joining(
            launch, fmt::format("rank {} of {} refused the experiment {}: it did not validate on that task's host (its "
                                "errors are in that task's output)", launch.agent_rank, launch.agent_count, file));
        std::cerr << fmt::format("commbench run (rank {} of {}, {}): the experiment {} did not validate on this task; {}\n",
                                 launch.agent_rank, launch.agent_count, launch.launcher, file,
                                 told ? "rank 0 was told and stops the job"
                                      : "rank 0's store did not answer within 3 s (did rank 0 refuse it too?)");
      }
      return kExitInvalid;
    }
    if (!sets.empty()) loaded->experiment.as_parsed["overrides"] = sets;
    if (p.vm.count("dry-run")) {
      const std::string folder = out_dir.empty() ? loaded->experiment.output_dir : out_dir;
      if (const std::string why = output_folder_problem(folder); !why.empty()) {
        std::cerr << fmt::format("commbench run: --dry-run: the output folder {} cannot be made ({}); the run would "
                                 "stop there (exit 2): pass -o a folder you can write\n", folder, why);
        return kExitInvalid;
      }
      const auto plan = plan_job(loaded->experiment);
      if (p.vm.count("json")) {  // for scripts, as --json is for a run
        nlohmann::json out = nlohmann::json::array();
        for (const Execution& e : plan)
          out.push_back({{"index", e.index}, {"run", e.run}, {"backend", e.backend}, {"world_size", e.world_size},
                         {"repeat", e.repeat}, {"cases", e.cases.size()}, {"records", expected_records(e)}});
        std::cout << out.dump(2) << "\n";
        return 0;
      }
      for (const Execution& e : plan)
        std::cout << fmt::format("exec {}: run '{}' backend {} world {} — {} cases\n", e.index, e.run,
                                 e.backend, e.world_size, e.cases.size());
      return 0;
    }
    // --json prints summary.json: it is written even where `outputs` leaves it out.
    auto& outputs = loaded->experiment.outputs;
    if (p.vm.count("json") && !outputs.empty() && std::find(outputs.begin(), outputs.end(), "summary_json") == outputs.end())
      outputs.push_back("summary_json");
    return run_experiment(*loaded, out_dir, p.vm.count("quiet") > 0 || p.vm.count("json") > 0, forced,
                          p.vm.count("json") > 0);
  });
}

int run_experiment(const LoadedExperiment& loaded, const std::string& out_dir, bool quiet,
                   const std::string& forced_launcher, bool json) {
  if (!out_dir_flag_ok(out_dir)) return kExitInvalid;
  LaunchContext launch;
  try {
    launch = discover_launch(current_environment(), forced_launcher);
  } catch (const LaunchError& e) {
    std::cerr << "commbench run: " << e.what() << "\n";
    return kExitInvalid;
  }
  if (!launch.note.empty()) std::cerr << "commbench run: note: " << launch.note << "\n";
  JobOptions opts;
  opts.output_dir = out_dir;
  opts.self_exe = current_executable_path();
  opts.quiet = quiet;
  opts.launch = launch;
  std::string job_dir;
  opts.job_dir_out = &job_dir;
  try {
    const int code = after_job(loaded.experiment, job_dir, run_job(loaded.experiment, loaded.plugins, opts), opts.quiet);
    // Only rank 0's task prints the job's account: the others' launcher logs would otherwise show a
    // bare non-zero exit.
    if (launch.agent_rank != 0 && code != kExitOk)
      std::cerr << fmt::format("commbench run (rank {} of {}, {}): exit {}: {}; rank 0's task printed the job's "
                               "account and wrote its results\n",
                               launch.agent_rank, launch.agent_count, launch.launcher, code,
                               code == kExitInterrupted ? "the job was interrupted" : "the job did not succeed");
    if (json && !job_dir.empty()) {
      std::ifstream in(std::filesystem::path(job_dir) / "summary.json");
      if (in) std::cout << in.rdbuf();
      else std::cerr << fmt::format("commbench run: --json: {}/summary.json could not be read\n", job_dir);
      std::cout.flush();
    }
    return code;
  } catch (const LaunchInterrupted& e) {  // while the tasks met or parted: what was measured is written
    std::cerr << fmt::format("commbench run (rank {} of {}, {}): {}\n", launch.agent_rank,
                             launch.agent_count, launch.launcher, e.what());
    return kExitInterrupted;
  } catch (const LaunchConfigError& e) {  // the launch's own setup: nothing ran, as a bad experiment
    std::cerr << fmt::format("commbench run (rank {} of {}, {}): {}\n", launch.agent_rank,
                             launch.agent_count, launch.launcher, e.what());
    return kExitInvalid;
  } catch (const LaunchError& e) {
    std::cerr << fmt::format("commbench run (rank {} of {}, {}): {}\n", launch.agent_rank,
                             launch.agent_count, launch.launcher, e.what());
    return kExitFailures;
  } catch (const StoreError& e) {  // the job's store went away where no step expected it
    std::cerr << fmt::format("commbench run (rank {} of {}, {}): lost the job's store: {}; rank 0's agent "
                             "was killed or its host went away\n",
                             launch.agent_rank, launch.agent_count, launch.launcher, e.what());
    return kExitFailures;
  }
}

int cmd_validate(const std::vector<std::string>& args) {
  return guarded("validate", [&] {
    std::string file;
    std::vector<std::string> plugin_dirs, sets, only;
    po::options_description d("Usage: commbench validate FILE [options]\n\n"
                              "Checks the experiment FILE (syntax, types, values, plugin capabilities)\n"
                              "without running anything. Exit code 0 if valid, 2 if not.\n\nOptions");
    d.add_options()("file", po::value(&file)->required(), "experiment file (TOML)")(
        "plugin-path,P", po::value(&plugin_dirs)->composing(), "extra plugin directory (repeatable)")(
        "set", po::value(&sets)->composing(), kSetHelp)("only", po::value(&only)->composing(), kOnlyHelp);
    ParsedArgs p = parse(args, d, true);
    if (p.help) {
      std::cout << d << "\n";
      return 0;
    }
    auto loaded = load_and_validate(file, plugin_dirs, sets);
    if (!loaded) return kExitInvalid;
    if (!select_runs(*loaded, only, "validate")) return kExitInvalid;
    const auto plan = plan_job(loaded->experiment);
    // What the job will write: all_pairs gives a record per ordered pair of each size, a
    // data_parallel execution one per overlap value, and every workload execution memory records.
    int64_t records = 0, workloads = 0;
    for (const auto& e : plan) {
      records += expected_records(e);
      if (e.workload != WorkloadKind::None) ++workloads;
    }
    std::cout << fmt::format("{}: valid — {} run(s), {} execution(s), {} case record(s){}\n", file,
                             loaded->experiment.runs.size(), plan.size(), records,
                             workloads ? fmt::format(", and the memory records of {} workload execution(s)", workloads)
                                       : std::string());
    return 0;
  });
}

int cmd_plugins(const std::vector<std::string>& args) {
  return guarded("plugins", [&] {
    std::vector<std::string> plugin_dirs;
    std::string only;
    po::options_description d("Usage: commbench plugins [NAME] [options]\n\n"
                              "Lists the backend plugins on the search path with their version, ABI version\n"
                              "and capabilities; with NAME, only that plugin, with every option it accepts\n"
                              "(type, default, meaning). Plugins are inspected in a subprocess and never initialised.\n"
                              "Exit code 0 if every plugin listed can be used, 1 if any cannot (its error is listed),\n"
                              "2 if NAME is not found.\n\nOptions");
    d.add_options()("plugin-path,P", po::value(&plugin_dirs)->composing(), "extra plugin directory (repeatable)")(
        "json", "print JSON instead of text")("file", po::value(&only), "NAME: the plugin to describe");
    ParsedArgs p = parse(args, d, true);
    if (p.help) {
      std::cout << d << "\n";
      return 0;
    }
    // With NAME only that file is probed (a plugin hanging elsewhere on the path costs nothing).
    const auto search = default_search_path(plugin_dirs);
    PluginListing listing = list_plugins(search, current_executable_path(), kListingProbeTimeout,
                                         only.empty() ? std::nullopt : std::optional<std::string>(only));
    if (!only.empty()) {
      auto it = listing.plugins.find(only);
      if (it == listing.plugins.end()) {
        std::vector<std::string> found;  // by file name, unprobed
        const PluginScan scan = scan_plugin_dirs(search_dir_paths(search));
        for (const PluginFile& f : scan.found) found.push_back(f.name);
        std::vector<std::string_view> names(found.begin(), found.end());
        std::cerr << fmt::format("commbench plugins: no plugin named '{}' on the search path{}; found: {}\n", only,
                                 did_you_mean(only, names), names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", ")));
        if (!scan.misnamed.empty())
          std::cerr << fmt::format("not loaded ({}): {}\n", kMisnamedWhy, fmt::join(scan.misnamed, ", "));
        for (const auto& f : scan.not_files)
          if (std::filesystem::path(f.path).filename() == plugin_file_name(only))
            std::cerr << fmt::format("not loaded: {} is {} ({})\n", f.path, f.why, kNotAFileWhy);
        return kExitInvalid;
      }
      PluginCatalog one{{it->first, it->second}};
      listing.plugins = std::move(one);
      // Files of this name that lose to it stay listed: the user learns which copy is used.
      listing.misnamed.clear();
      std::erase_if(listing.not_files, [&](const PluginScan::NotAFile& f) {
        return std::filesystem::path(f.path).filename() != plugin_file_name(only);
      });
    }
    if (p.vm.count("json"))
      std::cout << plugin_listing_json(listing).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    else if (!only.empty() && listing.plugins.begin()->second.ok()) {
      const std::string text = format_plugin_listing(listing);  // one plugin's block: the search path is left out
      std::cout << text.substr(0, text.find("Search path")) << format_plugin_options(listing.plugins.begin()->second);
    } else
      std::cout << format_plugin_listing(listing);
    // A plugin on the path that cannot be used is a failure a script must see (the listing
    // itself still shows every plugin, broken ones with their error).
    size_t unusable = 0;
    for (const auto& [name, info] : listing.plugins) unusable += !info.ok();
    if (unusable == 0) return 0;
    std::cerr << fmt::format("commbench plugins: {} plugin(s) cannot be used (see 'error' above); fix or remove "
                             "them, or check one with 'commbench conformance FILE'\n", unusable);
    return kExitFailures;
  });
}

int cmd_settings(const std::vector<std::string>& args) {
  return guarded("settings", [&] {
    po::options_description d("Usage: commbench settings\n\n"
                              "Prints every key a [[run]] or [defaults] table accepts, with its type, default\n"
                              "and meaning, as the Markdown table of docs/configuration.md.\n\nOptions");
    ParsedArgs p = parse(args, d, false);
    if (p.help) {
      std::cout << d << "\n";
      return 0;
    }
    std::cout << run_keys_markdown();
    return 0;
  });
}

}  // namespace commbench
