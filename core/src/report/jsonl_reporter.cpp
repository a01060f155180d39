#include "report/jsonl_reporter.h"

#include <nlohmann/json.hpp>

#include "report/execution_json.h"

namespace commbench {
namespace {

// {"type": ..., "schema_version": 1, <fields of body>}: the two tags first so a reader can
// dispatch on a line before reading the rest.
template <class T>
std::string tagged_line(const char* type, const T& body) {
  nlohmann::ordered_json line;
  line["type"] = type;
  line["schema_version"] = kResultsSchemaVersion;
  nlohmann::ordered_json fields = body;
  for (auto& [key, value] : fields.items()) line[key] = value;
  // Invalid UTF-8 (a plugin's error message, say) is replaced rather than thrown on: losing a
  // result line over one bad byte would be worse.
  return line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace

JsonlReporter::JsonlReporter(const std::filesystem::path& output_dir)
    : file_(output_dir / kFileName) {}

void JsonlReporter::job_started(const JobInfo& job) {
  nlohmann::ordered_json j;
  j["experiment"] = job.experiment;
  j["file"] = job.file;
  j["started_at"] = job.started_at;
  j["host"] = job.host;
  j["commbench_version"] = job.commbench_version;
  // The runs' expectations, so that `commbench check` can judge a job that never wrote its
  // summary.json (killed): without them it said "no expectations" and could pass.
  nlohmann::ordered_json expect = nlohmann::ordered_json::array();
  if (job.experiment_json.is_object() && job.experiment_json.contains("runs"))
    for (const auto& run : job.experiment_json["runs"])
      if (run.is_object() && run.contains("expect") && !run["expect"].is_null() && !run["expect"].empty())
        expect.push_back({{"run", run.value("name", std::string())}, {"expect", run["expect"]}});
  if (!expect.empty()) j["expect"] = std::move(expect);
  file_.write_line(tagged_line("job", j));
}

void JsonlReporter::case_done(const CaseRecord& record) {
  file_.write_line(tagged_line("case", record));
  ++cases_written_;
}

void JsonlReporter::record_done(const KindRecord& record) {
  file_.write_line(tagged_line(record.kind.c_str(), record.body));
}

void JsonlReporter::execution_done(const ExecutionOutcome& outcome) {
  file_.write_line(tagged_line("execution", outcome));
}

void JsonlReporter::job_done(const JobResult& result) {
  nlohmann::ordered_json j;
  j["finished_at"] = result.finished_at;
  j["exit_code"] = result.exit_code;
  file_.write_line(tagged_line("job_end", j));
}

}  // namespace commbench
