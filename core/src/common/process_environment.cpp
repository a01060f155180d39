#include "common/process_environment.h"

#include <unistd.h>  // environ (_GNU_SOURCE)

namespace commbench {

std::vector<std::string> merged_environment(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    const std::string key = kv.substr(0, kv.find('='));
    if (!overrides.count(key)) env.push_back(std::move(kv));
  }
  for (const auto& [k, v] : overrides) env.push_back(k + "=" + v);
  return env;
}

}  // namespace commbench
