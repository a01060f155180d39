// The subcommands of the `commbench` CLI. Each takes the arguments after its name and returns
// the process exit code (0 ok, 1 failures during the job, 2 invalid input, 130 interrupted).
#pragma once

#include <string>
#include <vector>

namespace commbench {

int cmd_run(const std::vector<std::string>& args);
int cmd_validate(const std::vector<std::string>& args);
int cmd_plugins(const std::vector<std::string>& args);
int cmd_settings(const std::vector<std::string>& args);

}  // namespace commbench
