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
                                     size_t jsonl_cases_written, const std::filesystem::path& job_dir) {
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
  // Said from what is on disk, not assumed: a summary is "written" only when the file is there.
  for (const char* summary : {"summary.json", "summary.md"}) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(job_dir / summary, ec);
    const char* state = failed(failures, summary) ? "NOT written (see above); the other files hold what was kept"
                        : !ec && size > 0         ? "written, with every measured case"
                                                  : "NOT written (the file is not there); the other files hold what was kept";
    s += fmt::format("  {}: {}\n", summary, state);
  }
  return s;
}

}  // namespace commbench
