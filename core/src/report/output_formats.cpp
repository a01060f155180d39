#include "report/output_formats.h"

#include <array>

#include "report/console_reporter.h"
#include "report/csv_reporter.h"
#include "report/execution_log_reporter.h"
#include "report/jsonl_reporter.h"
#include "report/markdown_reporter.h"
#include "report/summary_json_reporter.h"

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

}  // namespace commbench
