#include "launch/cpu_binding.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "observe/cpu_list.h"
#include "observe/host_files.h"

namespace commbench {
namespace {

bool node_dir(const std::string& n) {
  return n.rfind("node", 0) == 0 && n.size() > 4 && std::isdigit(static_cast<unsigned char>(n[4]));
}

std::vector<std::set<int>> cores(const std::set<int>& allowed) {
  // A core is named by its hardware threads' CPU list (core_id alone repeats across the dies of
  // one package on some hosts); keyed by package first, so that ranks fill a socket before the
  // next, as hwloc's order does even where CPU numbers alternate between sockets.
  std::map<std::tuple<long, int, std::string>, std::set<int>> core;
  std::map<std::string, int> lowest;  // siblings list -> its lowest allowed CPU
  for (int c : allowed) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
    std::string siblings = read_host_file(dir + "core_cpus_list").value_or("");
    if (siblings.empty()) siblings = read_host_file(dir + "thread_siblings_list").value_or("");
    if (siblings.empty()) siblings = std::to_string(c);  // undescribed: a core of its own
    const long package = static_cast<long>(read_host_number(dir + "physical_package_id").value_or(-1));
    const int first = lowest.emplace(siblings, c).first->second;
    core[{package, first, siblings}].insert(c);
  }
  std::vector<std::set<int>> units;
  for (auto& [key, cpus] : core) units.push_back(std::move(cpus));
  return units;
}

std::vector<std::set<int>> nodes(const std::set<int>& allowed) {
  std::vector<std::set<int>> units;
  for (const auto& n : list_host_dir("/sys/devices/system/node")) {  // natural order: node2 < node10
    if (!node_dir(n)) continue;
    std::set<int> mine;
    for (int c : parse_cpulist(read_host_file("/sys/devices/system/node/" + n + "/cpulist").value_or("")))
      if (allowed.count(c)) mine.insert(c);
    if (!mine.empty()) units.push_back(std::move(mine));
  }
  if (units.empty()) units.push_back(allowed);
  return units;
}

}  // namespace

std::vector<std::set<int>> binding_units(CpuBinding mode, const std::set<int>& allowed) {
  if (allowed.empty()) return {};
  switch (mode) {
    case CpuBinding::Core: return cores(allowed);
    case CpuBinding::Numa: return nodes(allowed);
    case CpuBinding::None: break;
  }
  return {};
}

std::set<int> cpus_for_local_rank(const std::vector<std::set<int>>& units, int local_rank) {
  if (units.empty() || local_rank < 0) return {};
  return units[static_cast<size_t>(local_rank) % units.size()];
}

std::set<int> host_cpuset() {
  // /proc/self/cgroup: "0::/path" under cgroup v2, "3:cpuset:/path" for v1's cpuset hierarchy.
  std::istringstream lines(read_host_file("/proc/self/cgroup").value_or(""));
  for (std::string line; std::getline(lines, line);) {
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    if (path == "/") path.clear();
    std::optional<std::string> cpus;
    if (controllers.empty()) cpus = read_host_file("/sys/fs/cgroup" + path + "/cpuset.cpus.effective");
    else if (("," + controllers + ",").find(",cpuset,") != std::string::npos)
      cpus = read_host_file("/sys/fs/cgroup/cpuset" + path + "/cpuset.effective_cpus");
    if (cpus && !cpus->empty()) return parse_cpulist(*cpus);
  }
  return parse_cpulist(read_host_file("/sys/devices/system/cpu/online").value_or(""));
}

CpuBindingPlan plan_cpu_binding(CpuBinding asked, const std::set<int>& agent_cpus, const std::set<int>& host_cpus,
                                bool solo, int local_world) {
  CpuBindingPlan plan;
  if (asked == CpuBinding::None) return plan;
  const std::string mode(cpu_binding_name(asked));
  if (!solo && !host_cpus.empty() && agent_cpus != host_cpus &&
      std::includes(host_cpus.begin(), host_cpus.end(), agent_cpus.begin(), agent_cpus.end())) {
    plan.note = fmt::format("cpu_binding = \"{}\": the launcher bound this rank to CPUs {} of {}; its binding is kept "
                            "(cpu_binding binds ranks a launcher leaves on every CPU; ask the launcher for the "
                            "binding instead, e.g. srun --cpu-bind=cores or mpirun --bind-to {})",
                            mode, format_cpulist(agent_cpus), format_cpulist(host_cpus), mode);
    return plan;
  }
  plan.units = binding_units(asked, agent_cpus);
  if (plan.units.empty()) {
    plan.note = fmt::format("cpu_binding = \"{}\": this process's CPU affinity cannot be read; the ranks run unbound",
                            mode);
    return plan;
  }
  plan.applied = asked;
  plan.own_cpus = static_cast<size_t>(local_world) <= plan.units.size();
  return plan;
}

}  // namespace commbench
