// `commbench conformance PLUGIN.so|NAME`: options, the plugin's file, the report and exit code.
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string_view>
#include <iostream>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "common/exit_codes.h"
#include "cli/cli_spec.h"
#include "cli/commands.h"
#include "conformance/driver.h"
#include "experiment/sizes.h"
#include "plugin/search_path.h"

namespace po = boost::program_options;

namespace commbench {
namespace {

// A path (has a '/' or names an existing file) or a backend name looked up on the search path.
std::optional<std::string> resolve_plugin(const std::string& arg, const std::vector<std::string>& dirs) {
  if (arg.find('/') != std::string::npos || std::filesystem::exists(arg))
    return std::filesystem::exists(arg) ? std::optional(std::filesystem::absolute(arg).string()) : std::nullopt;
  if (auto f = find_plugin(search_dir_paths(default_search_path(dirs)), arg)) return f->path;
  return std::nullopt;
}

// N or N-M, each a whole number: "abc" once said only "stoi", and "2x" ran 2 ranks.
std::vector<int> parse_ranks(const std::string& s) {
  const auto whole = [&](std::string_view text) {
    int v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size())
      throw po::error("--ranks wants N or N-M with 1 <= N <= M <= 64, got '" + s + "'");
    return v;
  };
  std::vector<int> out;
  const size_t dash = s.find('-');
  const std::string_view all(s);
  const int lo = whole(all.substr(0, dash)), hi = dash == std::string::npos ? lo : whole(all.substr(dash + 1));
  if (lo < 1 || hi < lo || hi > 64) throw po::error("--ranks wants N or N-M with 1 <= N <= M <= 64, got '" + s + "'");
  for (int w = lo; w <= hi; ++w) out.push_back(w);
  return out;
}

}  // namespace

int cmd_conformance(const std::vector<std::string>& args) {
  try {
    std::string plugin, junit, ranks = "1-4", max_bytes = "4MiB";
    std::vector<std::string> plugin_dirs, options;
    ConformanceOptions opts;
    double op_timeout_s = 30;
    po::options_description d(
        "Usage: commbench conformance PLUGIN [options]\n\n"
        "Proves a backend plugin (a libcommbench_backend_<name>.so file, or a backend name found on the\n"
        "plugin search path) follows the commbench ABI: loads it alone, then at each number of ranks\n"
        "(one process per rank) checks its function table and struct_size handling, every op x dtype x\n"
        "redop x placement x root it advertises with exact results (counts 0, 1, 7, 1001), every op at\n"
        "sizes across protocol and chunk boundaries (one element below and above each power of four from\n"
        "1 KiB to --max-bytes), self send/recv and p2p pending across a collective, that what it does not\n"
        "advertise is refused with CB_ERR_UNIMPLEMENTED, bad arguments, a timeout, an abort with an op\n"
        "pending, repeated communicator creation without leaks, and concurrency where claimed.\n"
        "Prints a table and a verdict. Exit code 0 if every check passed, 1 if any failed (or the backend\n"
        "cannot run on this machine), 2 for bad usage. docs/plugin-guide.md §12 says what each check expects.\n\nOptions");
    d.add_options()("plugin", po::value(&plugin)->required(), "plugin file or backend name")(
        "ranks", po::value(&ranks), "numbers of ranks to run, N or N-M (default 1-4)")(
        "option,O", po::value(&options)->composing(), "backend option KEY=VALUE handed to init (repeatable)")(
        "plugin-path,P", po::value(&plugin_dirs)->composing(), "extra plugin directory (repeatable)")(
        "junit", po::value(&junit), "also write the results as JUnit XML to this file")(
        "max-bytes", po::value(&max_bytes), "largest message of the size ladder, e.g. 16MiB (default 4MiB)")(
        "op-timeout", po::value(&op_timeout_s), "seconds one op may take before it counts as hung (default 30); a rank "
        "silent for 3x this plus 10 s is inside a call that never returns, and fails the stage")(
        "stage-timeout", po::value(&opts.stage_timeout_s), "seconds one number of ranks may take in all (default 900)")(
        "help,h", "show this help");
    offer_options(d);
    po::positional_options_description pos;
    pos.add("plugin", 1);
    po::variables_map vm;
    po::store(po::command_line_parser(args).options(d).positional(pos).run(), vm);
    if (vm.count("help")) {
      std::cout << d << "\n";
      return 0;
    }
    po::notify(vm);
    opts.world_sizes = parse_ranks(ranks);
    if (!(op_timeout_s > 0) || op_timeout_s > 86400) throw po::error("--op-timeout wants seconds in (0, 86400]");
    opts.op_timeout_ms = static_cast<int32_t>(op_timeout_s * 1000);
    // 0 made every stage fail at once, blamed on the plugin ("a call that never returned").
    if (!(opts.stage_timeout_s > 0) || opts.stage_timeout_s > 86400)
      throw po::error("--stage-timeout wants seconds in (0, 86400]");
    // Checked before the suite runs (minutes), not after it: a folder that is not there or not
    // writable is bad usage.
    if (!junit.empty()) {
      const std::filesystem::path parent = std::filesystem::absolute(junit).parent_path();
      std::error_code ec;
      if (!std::filesystem::is_directory(parent, ec) || ::access(parent.c_str(), W_OK) != 0)
        throw po::error("--junit " + junit + ": the folder " + parent.string() + " is not one this user can write "
                        "into; create it or choose another file");
    }
    const auto mb = parse_size(max_bytes);
    if (!mb) throw po::error("--max-bytes '" + max_bytes + "': " + mb.error);
    if (mb.value->elements) throw po::error("--max-bytes '" + max_bytes + "': a size in bytes, such as 4MiB");
    opts.max_bytes = mb.value->value;
    for (const std::string& kv : options) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) throw po::error("--option wants KEY=VALUE, got '" + kv + "'");
      opts.backend_options[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    const auto path = resolve_plugin(plugin, plugin_dirs);
    if (!path) {
      std::cerr << fmt::format("commbench conformance: no plugin file or backend named '{}' (try a path to the .so, "
                               "or 'commbench plugins' to see the names on the search path)\n", plugin);
      return kExitInvalid;
    }
    opts.plugin_path = *path;
    opts.self_exe = current_executable_path();
    const ConformanceReport report = run_conformance(opts);
    print_conformance(std::cout, report);
    if (!junit.empty()) {
      std::ofstream out(junit);
      out << conformance_junit(report);
      if (!out) {
        std::cerr << fmt::format("commbench conformance: cannot write {}\n", junit);
        return kExitFailures;
      }
    }
    return report.passed() ? 0 : kExitFailures;
  } catch (const std::runtime_error& e) {  // the run could not start here (no folder for its logs)
    std::cerr << fmt::format("commbench conformance: {}\n", e.what());
    return kExitInvalid;
  } catch (const std::exception& e) {  // po::error, std::stoi
    std::cerr << fmt::format("commbench conformance: {}\nTry 'commbench conformance --help'.\n", e.what());
    return kExitInvalid;
  }
}

}  // namespace commbench
