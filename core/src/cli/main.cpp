// commbench: benchmark collective and point-to-point communication across backends.
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "plugin/probe.h"
#include "worker/worker_main.h"

namespace {

constexpr const char* kUsage =
    "Usage: commbench <command> [options]\n\n"
    "Commands:\n"
    "  run FILE        run an experiment and write results\n"
    "  validate FILE   check an experiment file without running it\n"
    "  plugins         list the backend plugins found and what they support\n"
    "  settings        list every run setting with its type, default and meaning\n\n"
    "'commbench <command> --help' describes each command. Documentation: docs/ in the source tree.\n";

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
  if (cmd == "__probe") return argc == 3 ? commbench::run_probe(argv[2]) : 2;

  if (cmd == "run") return commbench::cmd_run(rest);
  if (cmd == "validate") return commbench::cmd_validate(rest);
  if (cmd == "plugins") return commbench::cmd_plugins(rest);
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
