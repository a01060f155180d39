#include "agent/exposure_warnings.h"

#include <array>
#include <set>
#include <sstream>

#include <fmt/format.h>

namespace commbench {
namespace {

// A backend's variable that chooses its network devices, and the values that keep a one-host
// run on loopback. UCX's plugin restricts itself to "lo" unless the variable is set
// (docs/backends/ucx.md), so an inherited value silently wins.
struct DeviceVariable {
  const char* backend;
  const char* variable;
  const char* loopback_only;  // comma-separated device names that expose nothing
};
constexpr std::array kDeviceVariables{DeviceVariable{"ucx", "UCX_NET_DEVICES", "lo"}};

bool only_loopback(const std::string& value, const std::string& allowed) {
  std::set<std::string> ok;
  std::istringstream a(allowed);
  for (std::string d; std::getline(a, d, ',');) ok.insert(d);
  std::istringstream v(value);
  bool any = false;
  for (std::string d; std::getline(v, d, ',');) {
    d = d.substr(0, d.find(':'));  // "lo:1" names a port of lo
    if (d.empty()) continue;
    if (!ok.count(d)) return false;
    any = true;
  }
  return any;
}

}  // namespace

std::optional<std::string> wildcard_store_warning(const std::string& bind_host, const std::string& source) {
  if (bind_host != "0.0.0.0" && bind_host != "::" && bind_host != "[::]") return std::nullopt;
  return fmt::format(
      "warning: rank 0's store listens on every interface ({}={}): any host that reaches this one can "
      "connect and try tokens. Set {} to this host's address on the cluster's private network instead",
      source, bind_host, source == "MASTER_ADDR" ? "MASTER_ADDR (or COMMBENCH_STORE_BIND)" : source);
}

std::vector<std::string> inherited_exposure_warnings(const std::vector<Execution>& plan, const EnvMap& env,
                                                     bool single_host) {
  std::vector<std::string> out;
  if (!single_host) return out;  // only one-host executions were kept to loopback
  std::set<std::string> said;
  for (const DeviceVariable& dv : kDeviceVariables) {
    const auto inherited = env.find(dv.variable);
    if (inherited == env.end() || only_loopback(inherited->second, dv.loopback_only)) continue;
    for (const Execution& e : plan) {
      // A run that sets the variable in its own env table chose it.
      if (e.backend != dv.backend || e.env.count(dv.variable) || said.count(dv.backend)) continue;
      said.insert(dv.backend);
      out.push_back(fmt::format(
          "warning: {}={} is inherited from your environment: run '{}' ({}) has every rank on this host, "
          "which would otherwise listen on loopback only, but now opens its listeners on the interfaces "
          "that value names. Unset {} (or set it in the run's env table if you mean it)",
          dv.variable, inherited->second, e.run, e.backend, dv.variable));
    }
  }
  return out;
}

}  // namespace commbench
