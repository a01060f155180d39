#include "launch/rank_discovery.h"

extern char** environ;

namespace commbench {
namespace {

class LocalDiscovery : public RankDiscovery {
 public:
  std::string name() const override { return "local"; }
  std::optional<LaunchContext> detect(const EnvMap&) const override {
    LaunchContext c;
    c.reason = "no launcher environment found: one agent starts every rank on this host";
    return c;
  }
};

}  // namespace

std::vector<std::unique_ptr<RankDiscovery>> default_discoveries() {
  std::vector<std::unique_ptr<RankDiscovery>> d;
  d.push_back(std::make_unique<LocalDiscovery>());
  return d;
}

LaunchContext discover_launch(const EnvMap& env) {
  for (const auto& d : default_discoveries())
    if (auto c = d->detect(env)) return *c;
  return LaunchContext{};
}

EnvMap current_environment() {
  EnvMap env;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

}  // namespace commbench
