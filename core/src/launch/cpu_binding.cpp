#include "launch/cpu_binding.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <utility>

#include "observe/cpu_list.h"
#include "observe/host_files.h"

namespace commbench {
namespace {

std::vector<std::set<int>> by_lowest_cpu(std::vector<std::set<int>> units) {
  std::erase_if(units, [](const std::set<int>& u) { return u.empty(); });
  std::sort(units.begin(), units.end(), [](const auto& a, const auto& b) { return *a.begin() < *b.begin(); });
  return units;
}

std::vector<std::set<int>> cores(const std::set<int>& allowed) {
  // (package, core id) names a physical core; -1 and the CPU itself where sysfs says nothing.
  std::map<std::pair<long, long>, std::set<int>> core;
  for (int c : allowed) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
    const auto package = read_host_number(dir + "physical_package_id");
    const auto id = read_host_number(dir + "core_id");
    const auto key = package && id ? std::pair<long, long>(static_cast<long>(*package), static_cast<long>(*id))
                                   : std::pair<long, long>(-1, c);
    core[key].insert(c);
  }
  std::vector<std::set<int>> units;
  for (auto& [key, cpus] : core) units.push_back(std::move(cpus));
  return by_lowest_cpu(std::move(units));
}

std::vector<std::set<int>> nodes(const std::set<int>& allowed) {
  std::vector<std::set<int>> units;
  for (const auto& n : list_host_dir("/sys/devices/system/node")) {
    if (n.rfind("node", 0) != 0 || n.size() == 4 || !std::isdigit(static_cast<unsigned char>(n[4]))) continue;
    std::set<int> mine;
    for (int c : parse_cpulist(read_host_file("/sys/devices/system/node/" + n + "/cpulist").value_or("")))
      if (allowed.count(c)) mine.insert(c);
    units.push_back(std::move(mine));
  }
  units = by_lowest_cpu(std::move(units));
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

}  // namespace commbench
