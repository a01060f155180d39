// `commbench merge-trace JOB_FOLDER`: (re)builds trace.json from the ranks' trace files and the
// execution records in results.jsonl: after copying other hosts' trace/ files into a job folder
// that was not shared, or after telemetry.csv arrived.
#include <fstream>
#include <iostream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <boost/program_options.hpp>

#include "cli/cli_spec.h"
#include "cli/commands.h"
#include "common/json_nesting.h"
#include "report/execution_json.h"
#include "report/trace_merge.h"

namespace commbench {

int cmd_merge_trace(const std::vector<std::string>& args) {
  boost::program_options::options_description d(
      "Usage: commbench merge-trace JOB_FOLDER\n\n"
      "Writes JOB_FOLDER/trace.json from JOB_FOLDER/trace/exec<E>-rank<R>.json, the clock estimates in\n"
      "JOB_FOLDER/results.jsonl and JOB_FOLDER/telemetry.csv if present.\n\nOptions");
  d.add_options()("help,h", "show this help");
  offer_options(d);
  if (args.size() != 1 || args[0] == "--help" || args[0] == "-h") {
    (args.size() == 1 ? std::cout : std::cerr) << d << "\n";
    return args.size() == 1 ? 0 : 2;
  }
  const std::filesystem::path job = args[0];
  std::ifstream in(job / "results.jsonl");
  if (!in) {
    std::cerr << fmt::format("commbench merge-trace: cannot read {}; give the job's results folder\n",
                             (job / "results.jsonl").string());
    return 2;
  }
  std::vector<ExecutionOutcome> executions;
  int lineno = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineno;
    // Nesting checked before parsing: a damaged or hostile line cannot exhaust the stack.
    const size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string::npos &&
        json_value_extent(std::string_view(line).substr(first)).end == JsonExtent::End::TooDeep) {
      std::cerr << fmt::format("commbench merge-trace: {}:{}: nested deeper than {} levels; line skipped\n",
                               (job / "results.jsonl").string(), lineno, kMaxJsonNesting);
      continue;
    }
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || j.value("type", "") != "execution") continue;
    try {
      executions.push_back(j.get<ExecutionOutcome>());
    } catch (const nlohmann::json::exception& e) {
      std::cerr << fmt::format("commbench merge-trace: {}:{}: not a valid execution record ({}); line skipped\n",
                               (job / "results.jsonl").string(), lineno, e.what());
    }
  }
  // A job killed during an execution left its rank files but no execution record (written when
  // the execution ends): merged too, on each rank's own clock, and said.
  const std::vector<ExecutionOutcome> unrecorded = executions_without_record(job, executions);
  for (const ExecutionOutcome& o : unrecorded)
    std::cerr << fmt::format("commbench merge-trace: exec {}: results.jsonl has no record of it (the job ended "
                             "during it); its rank files are merged on their own clocks, not aligned to rank 0's\n",
                             o.info.exec_index);
  executions.insert(executions.end(), unrecorded.begin(), unrecorded.end());
  const std::vector<int> traced = traced_executions(job, executions);
  if (traced.empty()) {
    std::cerr << fmt::format("commbench merge-trace: no rank trace under {}; was the job run with trace = true?\n",
                             (job / "trace").string());
    return 2;
  }
  try {
    const TraceMergeSummary s = merge_job_trace(job, executions, traced);
    std::cout << fmt::format("{}: {} events from {} rank files, {} telemetry samples{}{}\n",
                             (job / TraceMergeReporter::kFileName).string(), s.events, s.files, s.counter_samples,
                             s.missing.empty() ? "" : fmt::format("; {} rank files missing", s.missing.size()),
                             s.damaged.empty() ? "" : fmt::format("; {} rank files damaged", s.damaged.size()));
    // What was lost or left unaligned is said, and makes the exit code 1: the trace was written
    // from what could be read.
    for (const std::string& d : s.damaged) std::cerr << "commbench merge-trace: " << d << "\n";
    for (const std::string& m : s.missing) std::cerr << "commbench merge-trace: " << m << ": no rank file\n";
    if (!s.damaged.empty() || !s.missing.empty() || !unrecorded.empty()) return 1;
  } catch (const std::exception& e) {
    std::cerr << "commbench merge-trace: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace commbench
