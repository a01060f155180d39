#include "report/output_failures.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

namespace commbench {
namespace {

bool failed(const std::vector<MultiReporter::OutputFailure>& failures, const char* file_name) {
  return std::any_of(failures.begin(), failures.end(), [&](const MultiReporter::OutputFailure& f) {
    return std::filesystem::path(f.path).filename() == file_name;
  });
}

}  // namespace

std::string describe_output_failures(const std::vector<MultiReporter::OutputFailure>& failures,
                                     const JobResult& result, const std::vector<Execution>& plan,
                                     size_t jsonl_cases_written) {
  int planned = 0;
  for (const Execution& e : plan) planned += expected_records(e);
  std::string s = "commbench run: results could not be written:\n";
  for (const auto& f : failures) s += fmt::format("  {}\n", f.message);
  s += fmt::format("  {} of {} planned case(s) were measured in {} execution(s).\n",
                   result.cases.size(), planned, result.executions.size());
  s += fmt::format(
      "  results.jsonl holds {} case line(s){}; every line in it is complete (a line cut by the "
      "failure was removed).\n",
      jsonl_cases_written, failed(failures, "results.jsonl") ? " and no job_end line" : "");
  for (const char* summary : {"summary.json", "summary.md"})
    s += fmt::format("  {}: {}\n", summary,
                     failed(failures, summary) ? "NOT written (see above); the other files hold what was kept"
                                               : "written, with every measured case");
  return s;
}

}  // namespace commbench
