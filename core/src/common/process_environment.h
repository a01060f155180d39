// The environment a child process gets: this process's, with some variables set on top (a run's
// `env` table). One definition for the workers and for the plugin probe before a run, so that
// both load a plugin with the same LD_LIBRARY_PATH.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace commbench {

// "KEY=value" entries: environ without the keys `overrides` sets, then `overrides`.
std::vector<std::string> merged_environment(const std::map<std::string, std::string>& overrides);

}  // namespace commbench
