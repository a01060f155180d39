// What to tell the user when results stopped being written mid-job (disk full, I/O error): the
// true count of cases measured, and per file what it holds now.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "report/multi_reporter.h"

namespace commbench {

// Several lines for stderr, starting "commbench run: results could not be written". What each
// summary holds is checked in `job_dir`: "written" only for a file that is there.
std::string describe_output_failures(const std::vector<MultiReporter::OutputFailure>& failures,
                                     const JobResult& result, const std::vector<Execution>& plan,
                                     size_t jsonl_cases_written, const std::filesystem::path& job_dir);

}  // namespace commbench
