// Linux CPU lists ("0-3,8,10-11", as sysfs and /proc write them) and the calling thread's CPU
// affinity as a set.
#pragma once

#include <set>
#include <string>

namespace commbench {

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}; malformed parts are skipped.
std::set<int> parse_cpulist(const std::string& text);
// The inverse, ranges collapsed.
std::string format_cpulist(const std::set<int>& cpus);
// The CPUs the calling thread may run on; empty when the kernel does not say.
std::set<int> affinity_cpus();

}  // namespace commbench
