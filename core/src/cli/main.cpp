// commbench: benchmark collective and point-to-point communication across backends.
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli/command_table.h"
#include "conformance/rank_main.h"
#include "observe/warm_load.h"
#include "plugin/probe.h"
#include "plugin/search_path.h"
#include "worker/worker_main.h"

namespace {

// The documentation this binary would point a user at: installed next to it
// (<prefix>/share/doc/commbench, wherever the prefix was installed; the build tree mirrors docs/
// there too), else where the build meant to install it.
std::string docs_dir() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = commbench::current_executable_path();
  const fs::path installed = (exe.parent_path().parent_path() / COMMBENCH_INSTALL_DOCDIR_RELATIVE).lexically_normal();
  if (fs::is_regular_file(installed / "configuration.md", ec)) return installed.string();
  return COMMBENCH_INSTALL_DOC_DIR;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << commbench::cli_usage(docs_dir());
    return 2;
  }
  const std::string cmd = argv[1];
  std::vector<std::string> rest(argv + 2, argv + argc);
  // Internal entry points: the agent starts these in subprocesses.
  if (cmd == "__worker") return commbench::worker_main(argc - 1, argv + 1);
  if (cmd == "__warm-load") return commbench::warm_load_main(argc - 1, argv + 1);
  if (cmd == "__conformance_rank") return commbench::conformance_rank_main(argc - 1, argv + 1);
  if (cmd == "__probe") return argc == 3 ? commbench::run_probe(argv[2]) : 2;
  if (cmd == "__generate-cli-files") return argc == 3 ? commbench::generate_cli_files(argv[2], docs_dir()) : 2;

  if (const auto* c = commbench::find_cli_command(cmd)) return c->run(rest);
  if (cmd == "help" && !rest.empty()) {  // `commbench help CMD` is `commbench CMD --help`
    if (const auto* c = commbench::find_cli_command(rest[0])) return c->run({"--help"});
    std::cerr << "commbench help: no command '" << rest[0] << "'\n\n" << commbench::cli_usage(docs_dir());
    return 2;
  }
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::cout << commbench::cli_usage(docs_dir());
    return 0;
  }
  if (cmd == "--version") {
    std::cout << "commbench " << COMMBENCH_VERSION << " (plugin ABI " << 1 << ")\n";
    return 0;
  }
  std::cerr << "commbench: unknown command '" << cmd << "'\n\n" << commbench::cli_usage(docs_dir());
  return 2;
}
