#include "observe/cpu_list.h"

#include <sched.h>

#include <cstdio>
#include <sstream>

#include <fmt/format.h>

namespace commbench {

std::set<int> parse_cpulist(const std::string& text) {
  std::set<int> cpus;
  std::istringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    int a = 0, b = 0;
    if (std::sscanf(part.c_str(), "%d-%d", &a, &b) == 2) {
      for (int c = a; c <= b && c - a < 65536; ++c) cpus.insert(c);
    } else if (std::sscanf(part.c_str(), "%d", &a) == 1) {
      cpus.insert(a);
    }
  }
  return cpus;
}

std::string format_cpulist(const std::set<int>& cpus) {
  std::string out;
  for (auto it = cpus.begin(); it != cpus.end();) {
    int a = *it, b = a;
    while (++it != cpus.end() && *it == b + 1) b = *it;
    if (!out.empty()) out += ",";
    out += a == b ? std::to_string(a) : fmt::format("{}-{}", a, b);
  }
  return out;
}

std::set<int> affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::set<int> cpus;
  if (::sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.insert(c);
  return cpus;
}

}  // namespace commbench
