// The outcome of `commbench conformance`: one row per check and number of ranks, a verdict, and
// the same as JUnit XML for CI systems.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace commbench {

enum class ConformanceResult { Pass, Fail, Skip };

struct ConformanceCheck {
  std::string name;
  int ranks = 0;  // 0: the plugin alone, before any rank runs
  ConformanceResult result = ConformanceResult::Pass;
  std::string detail;
};

struct ConformanceReport {
  std::string plugin;  // name
  std::string path;
  std::string version;
  std::vector<ConformanceCheck> checks;
  std::string log_dir;  // where the ranks' logs were kept (after a failure), or ""
  bool unavailable = false;  // the backend could not run here: nothing beyond loading was proven

  size_t count(ConformanceResult r) const;
  bool passed() const { return count(ConformanceResult::Fail) == 0 && !unavailable && !checks.empty(); }
};

const char* check_result_name(ConformanceResult r);  // "pass", "fail", "skip"

// The table and the verdict line(s), as printed on the console.
void print_conformance(std::ostream& out, const ConformanceReport& report);
// JUnit XML: one testsuite per number of ranks ("alone" for 0), one testcase per check.
std::string conformance_junit(const ConformanceReport& report);

}  // namespace commbench
