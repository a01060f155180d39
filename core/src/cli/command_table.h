// The commands of the `commbench` CLI, defined once: main() dispatches through this table, and the
// usage text, `commbench help CMD`, the bash/zsh completions and the man page are generated from
// it (cli/cli_files.cpp), with each command's options read from its own parser (cli/cli_spec.h).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cli/cli_spec.h"

namespace commbench {

struct CliCommand {
  std::string_view name;
  std::string_view args;      // "FILE", "DIR...", "BASELINE NEW", ""
  std::string_view summary;   // one line
  std::string_view completes; // what the positional arguments are: "file", "dir", "plugin", "op", ""
  int (*run)(const std::vector<std::string>& args);
  bool python = false;        // written in Python (python/commbench): options from its argparse
};

std::span<const CliCommand> cli_commands();
const CliCommand* find_cli_command(std::string_view name);

// `commbench --help`: the commands and where the documentation is (`docs_dir`, found at run time).
std::string cli_usage(const std::string& docs_dir);

// The options of one command, from its own parser (C++) or from the Python package's argparse
// (`python3 -m commbench __cli-spec`); empty when Python cannot be run.
std::vector<CliOption> cli_command_options(const CliCommand& command);

// `commbench __generate-cli-files DIR`: DIR/bash-completion/completions/commbench,
// DIR/zsh/site-functions/_commbench and DIR/man/man1/commbench.1. Returns an exit code.
int generate_cli_files(const std::string& dir, const std::string& docs_dir);

}  // namespace commbench
