#include "report/output_formats.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "experiment/did_you_mean.h"

#include "report/console_reporter.h"
#include "report/csv_reporter.h"
#include "report/execution_log_reporter.h"
#include "report/jsonl_reporter.h"
#include "report/markdown_reporter.h"
#include "report/summary_json_reporter.h"
#include "report/trace_merge.h"

namespace commbench {
namespace {

template <class R>
std::unique_ptr<Reporter> in_folder(const OutputContext& c) {
  return std::make_unique<R>(c.job_dir);
}

// Order matters: reporters see each event in this order, and results.jsonl goes first so a
// record is on disk before anything else can fail over it.
const std::array kFormats{
    OutputFormat{"jsonl", "results.jsonl", "one JSON line per case record, plus job and execution lines", true,
                 in_folder<JsonlReporter>},
    OutputFormat{"console", "standard output", "tables per [[run]] and a comparison when it has several backends; `--quiet` turns it off", false,
                 [](const OutputContext& c) -> std::unique_ptr<Reporter> {
                   return std::make_unique<ConsoleReporter>(c.out, c.progress);
                 }},
    OutputFormat{"csv", "results.csv", "one row per case record", false, in_folder<CsvReporter>},
    OutputFormat{"execution_log", "execution_log.csv", "all_pairs: every timed transfer in execution order", false,
                 in_folder<ExecutionLogReporter>},
    OutputFormat{"summary_json", "summary.json", "the experiment, plugins, environment, executions and records of the job", false,
                 in_folder<SummaryJsonReporter>},
    OutputFormat{"markdown", "summary.md", "the tables of the console, in Markdown", false, in_folder<MarkdownReporter>},
    OutputFormat{"trace", "trace.json", "runs with `trace = true`: the ranks' traces merged on rank 0's timeline, telemetry as counters (docs/observability.md)", false,
                 in_folder<TraceMergeReporter>},
};

}  // namespace

std::span<const OutputFormat> output_formats() { return kFormats; }

const OutputFormat* find_output_format(std::string_view name) {
  for (const OutputFormat& f : kFormats)
    if (f.name == name) return &f;
  return nullptr;
}

std::vector<std::string_view> output_format_names() {
  std::vector<std::string_view> names;
  for (const OutputFormat& f : kFormats) names.push_back(f.name);
  return names;
}

std::vector<Diagnostic> check_outputs(const Experiment& exp) {
  std::vector<Diagnostic> diags;
  const auto valid = output_format_names();
  const bool traced = std::any_of(exp.runs.begin(), exp.runs.end(), [](const RunSpec& r) { return r.trace; });
  const bool all_pairs = std::any_of(exp.runs.begin(), exp.runs.end(), [](const RunSpec& r) {
    return std::find(r.ops.begin(), r.ops.end(), OpKind::AllPairs) != r.ops.end();
  });
  for (size_t i = 0; i < exp.outputs.size(); ++i) {
    auto it = exp.outputs_where.find(fmt::format("outputs[{}]", i));
    const SourcePos at = it == exp.outputs_where.end() ? SourcePos{exp.file, 0, 0} : it->second;
    if (!find_output_format(exp.outputs[i])) {
      diags.push_back(Diagnostic{Diagnostic::Severity::Error, at, unknown_value("output", exp.outputs[i], valid)});
    } else if (exp.outputs[i] == "trace" && !traced) {  // asked for, and nothing would write it
      diags.push_back(Diagnostic{Diagnostic::Severity::Warning, at,
                                 "output 'trace' is written only for runs with `trace = true`, and no run sets it: "
                                 "there will be no trace.json"});
    } else if (exp.outputs[i] == "execution_log" && !all_pairs) {
      diags.push_back(Diagnostic{Diagnostic::Severity::Warning, at,
                                 "output 'execution_log' lists the transfers of all_pairs, and no run has that op: "
                                 "there will be no execution_log.csv rows"});
    }
  }
  return diags;
}

bool output_chosen(const Experiment& exp, std::string_view name) {
  return exp.outputs.empty() || std::find(exp.outputs.begin(), exp.outputs.end(), name) != exp.outputs.end();
}

}  // namespace commbench
