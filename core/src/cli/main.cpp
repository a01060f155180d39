// commbench: benchmark collective and point-to-point communication across backends.
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "conformance/rank_main.h"
#include "cli/python_tools.h"
#include "cli/quick.h"
#include "observe/warm_load.h"
#include "plugin/probe.h"
#include "worker/worker_main.h"

namespace {

constexpr const char* kUsage =
    "Usage: commbench <command> [options]\n\n"
    "Commands:\n"
    "  run FILE        run an experiment and write results\n"
    "  quick OPS       run without a file, nccl-tests' flags (-b 8 -e 1G -f 2 -n 20 ...)\n"
    "  validate FILE   check an experiment file without running it\n"
    "  plugins         list the backend plugins found and what they support\n"
    "  report DIR...   plots, report.html, report.md and analysis.md of results folders\n"
    "  compare BASELINE NEW  per-case time and busbw ratios; exit 1 on a regression\n"
    "  check DIR       the experiment's expectations (`expect`) against its results\n"
    "  merge-trace DIR rebuild a job folder's trace.json (docs/observability.md)\n"
    "  settings        list every run setting with its type, default and meaning\n"
    "  conformance P   prove a backend plugin (file or name) follows the ABI before shipping it\n\n"
    "'commbench <command> --help' describes each command. Documentation (configuration, outputs,\n"
    "metrics, launching, the plugin ABI): " COMMBENCH_INSTALL_DOC_DIR " once installed, docs/ in the\n"
    "source tree.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string cmd = argv[1];
  std::vector<std::string> rest(argv + 2, argv + argc);
  // Internal entry points: the agent starts these in subprocesses.
  if (cmd == "__worker") return commbench::worker_main(argc - 1, argv + 1);
  if (cmd == "__warm-load") return commbench::warm_load_main(argc - 1, argv + 1);
  if (cmd == "__conformance_rank") return commbench::conformance_rank_main(argc - 1, argv + 1);
  if (cmd == "__probe") return argc == 3 ? commbench::run_probe(argv[2]) : 2;

  if (cmd == "run") return commbench::cmd_run(rest);
  if (cmd == "validate") return commbench::cmd_validate(rest);
  if (cmd == "plugins") return commbench::cmd_plugins(rest);
  if (cmd == "conformance") return commbench::cmd_conformance(rest);
  if (cmd == "merge-trace") return commbench::cmd_merge_trace(rest);
  if (cmd == "quick") return commbench::cmd_quick(rest);
  // Written in Python (python/commbench): the C++ side finds the package and runs it.
  if (cmd == "report" || cmd == "compare" || cmd == "check") {
    rest.insert(rest.begin(), cmd);
    return commbench::run_python_tool(rest, "commbench " + cmd);
  }
  if (cmd == "settings") return commbench::cmd_settings(rest);
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::cout << kUsage;
    return 0;
  }
  if (cmd == "--version") {
    std::cout << "commbench " << COMMBENCH_VERSION << " (plugin ABI " << 1 << ")\n";
    return 0;
  }
  std::cerr << "commbench: unknown command '" << cmd << "'\n\n" << kUsage;
  return 2;
}
