#include "launch/cpu_binding.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
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
  // one package on some hosts). Packages are ordered by their lowest allowed CPU and cores within
  // one likewise, so that ranks fill a socket before the next, as hwloc's logical order does even
  // where CPU numbers alternate between sockets; a CPU sysfs does not describe is a core (and a
  // package) of its own, in its natural place.
  struct Core {
    std::string package;
    std::set<int> cpus;
  };
  std::map<std::string, Core> by_siblings;
  for (int c : allowed) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
    std::string siblings = read_host_file(dir + "core_cpus_list").value_or("");
    if (siblings.empty()) siblings = read_host_file(dir + "thread_siblings_list").value_or("");
    if (siblings.empty()) siblings = "cpu" + std::to_string(c);
    const auto package = read_host_file(dir + "physical_package_id");
    Core& core = by_siblings[siblings];
    core.package = package ? *package : "cpu" + std::to_string(c);
    core.cpus.insert(c);
  }
  std::map<std::string, int> package_first;  // package -> its lowest allowed CPU
  for (const auto& [siblings, core] : by_siblings) {
    auto [it, added] = package_first.emplace(core.package, *core.cpus.begin());
    if (!added) it->second = std::min(it->second, *core.cpus.begin());
  }
  std::vector<std::pair<std::pair<int, int>, std::set<int>>> ordered;  // ((package's, core's lowest CPU), CPUs)
  for (const auto& [siblings, core] : by_siblings)
    ordered.push_back({{package_first[core.package], *core.cpus.begin()}, core.cpus});
  std::sort(ordered.begin(), ordered.end());
  std::vector<std::set<int>> units;
  for (auto& [key, cpus] : ordered) units.push_back(std::move(cpus));
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

std::set<int> host_cpuset(const std::string& root) {
  auto read = [&](const std::string& path) -> std::optional<std::string> {
    std::ifstream in(root + path);
    std::stringstream text;
    if (!(in >> text.rdbuf())) return std::nullopt;
    std::string s = text.str();
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    return s;
  };
  // /proc/self/cgroup: "0::/path" under cgroup v2, "3:cpuset:/path" (or "3:cpu,cpuset:/path") for
  // v1's cpuset hierarchy. Inside a container without a cgroup namespace the path names the
  // host's view (/docker/<id>) while the mount holds only the container's own group: the walk up
  // from the path stops at the first directory that has the file, which is then the container's.
  std::istringstream lines(read("/proc/self/cgroup").value_or(""));
  for (std::string line; std::getline(lines, line);) {
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    std::vector<std::string> files;  // relative to the mount, after the group's path
    std::vector<std::string> mounts;
    if (controllers.empty()) {
      mounts = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
      files = {"/cpuset.cpus.effective"};
    } else if (("," + controllers + ",").find(",cpuset,") != std::string::npos) {
      mounts = {"/sys/fs/cgroup/cpuset", "/sys/fs/cgroup/" + controllers};
      files = {"/cpuset.effective_cpus", "/cpuset.cpus"};
    } else {
      continue;
    }
    for (std::string path = line.substr(second + 1);; path = path.substr(0, path.rfind('/'))) {
      if (path == "/") path.clear();
      for (const std::string& mount : mounts)
        for (const std::string& file : files)
          if (auto cpus = read(mount + path + file); cpus && !cpus->empty()) return parse_cpulist(*cpus);
      if (path.empty()) break;
    }
  }
  return parse_cpulist(read("/sys/devices/system/cpu/online").value_or(""));
}

CpuBindingPlan plan_cpu_binding(CpuBinding asked, const std::set<int>& agent_cpus, const std::set<int>& host_cpus,
                                bool solo, int local_ranks) {
  CpuBindingPlan plan;
  if (asked == CpuBinding::None) return plan;
  const std::string mode(cpu_binding_name(asked));
  if (agent_cpus.empty()) {
    plan.note = fmt::format("cpu_binding = \"{}\": this process's CPU affinity cannot be read; the ranks run unbound",
                            mode);
    return plan;
  }
  if (!solo && !host_cpus.empty() && agent_cpus != host_cpus &&
      std::includes(host_cpus.begin(), host_cpus.end(), agent_cpus.begin(), agent_cpus.end())) {
    plan.note = fmt::format("cpu_binding = \"{}\": the launcher bound this rank to CPUs {} of {}; its binding is kept "
                            "(cpu_binding binds ranks a launcher leaves on every CPU; ask the launcher for the "
                            "binding instead, e.g. srun --cpu-bind={} or mpirun --bind-to {})",
                            mode, format_cpulist(agent_cpus), format_cpulist(host_cpus),
                            asked == CpuBinding::Numa ? "ldoms" : "cores", mode);
    return plan;
  }
  plan.units = binding_units(asked, agent_cpus);
  plan.applied = asked;
  plan.own_cpus = static_cast<size_t>(std::max(local_ranks, 1)) <= plan.units.size();
  return plan;
}

}  // namespace commbench
