#include "report/summary_json_reporter.h"

#include <algorithm>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "report/execution_json.h"
#include "report/output_file.h"
#include "report/scaling.h"
#include "report/suite_json.h"

namespace commbench {
namespace {

// Every world size the job actually used, ascending.
nlohmann::ordered_json world_sizes(const JobResult& result) {
  std::set<int> sizes;
  for (const auto& e : result.executions) sizes.insert(e.info.world_size);
  for (const auto& c : result.cases) sizes.insert(c.world_size);
  sizes.erase(0);
  return nlohmann::ordered_json(std::vector<int>(sizes.begin(), sizes.end()));
}

// name -> the plugin's static info (JobInfo::plugins) plus "metadata": the facts its workers
// reported, merged over the backend's executions, later ones winning on equal keys (each
// execution's own metadata stays in "executions").
nlohmann::ordered_json backends(const JobInfo& job, const JobResult& result) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  if (job.plugins.is_object())
    for (auto& [name, info] : job.plugins.items()) {
      out[name] =
          info.is_object() ? nlohmann::ordered_json(info) : nlohmann::ordered_json::object();
      out[name]["metadata"] = nlohmann::ordered_json::object();
    }
  for (const auto& e : result.executions) {
    auto& entry = out[e.info.backend];
    if (!entry.is_object()) entry = nlohmann::ordered_json::object();
    auto& merged = entry["metadata"];
    if (!merged.is_object()) merged = nlohmann::ordered_json::object();
    // Deep merge (RFC 7396): {"ranks": {"0": ...}} from several executions accumulate.
    if (e.metadata.is_object()) merged.merge_patch(nlohmann::ordered_json(e.metadata));
  }
  return out;
}

// The clock that timed the cases, as the ranks reported it ("timer" in each rank's metadata):
// one description when every rank agrees, else the distinct ones; with the coarsest resolution.
void set_clock(nlohmann::ordered_json& environment, const JobResult& result) {
  std::set<std::string> timers;
  double resolution_ns = 0;
  for (const auto& e : result.executions) {
    if (!e.metadata.is_object() || !e.metadata.contains("ranks") || !e.metadata["ranks"].is_object()) continue;
    for (const auto& [rank, facts] : e.metadata["ranks"].items()) {
      if (!facts.is_object()) continue;
      if (auto t = facts.find("timer"); t != facts.end() && t->is_string()) timers.insert(t->get<std::string>());
      if (auto r = facts.find("timer_resolution_ns"); r != facts.end() && r->is_number())
        resolution_ns = std::max(resolution_ns, r->get<double>());
    }
  }
  if (timers.empty()) {
    environment["clock"] = "none reported (no worker started timing)";
    return;
  }
  // Each rank calibrates its counter itself, so the same clock reads "2096.013 MHz" on one rank
  // and "2096.014 MHz" on the next: the same timer, said once with its range of frequencies.
  static const std::regex mhz(R"(([0-9]+(?:\.[0-9]+)?) MHz)");
  std::set<std::string> kinds;
  double lo = 1e300, hi = -1e300;
  for (const std::string& t : timers) {
    kinds.insert(std::regex_replace(t, mhz, "<f> MHz"));
    std::smatch m;
    if (std::regex_search(t, m, mhz)) {
      lo = std::min(lo, std::stod(m[1].str()));
      hi = std::max(hi, std::stod(m[1].str()));
    }
  }
  if (timers.size() == 1)
    environment["clock"] = *timers.begin();
  else if (kinds.size() == 1 && lo <= hi)
    environment["clock"] = std::regex_replace(*timers.begin(), mhz, fmt::format("{:.3f}–{:.3f} MHz", lo, hi),
                                              std::regex_constants::format_first_only);
  else
    environment["clock"] = std::vector<std::string>(timers.begin(), timers.end());
  if (resolution_ns > 0) environment["clock_resolution_ns"] = resolution_ns;
}

// docs/output.md, "scaling".
nlohmann::ordered_json scaling_json(const std::vector<ScalingSeries>& series) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& s : series) {
    nlohmann::ordered_json j{{"run", s.run},       {"run_index", s.run_index}, {"backend", s.backend},
                             {"op", s.op},         {"dtype", s.dtype},         {"redop", s.redop},
                             {"placement", s.placement}, {"memory", s.memory},
                             {"mode", scaling_name(s.mode)}, {"bytes", s.bytes},
                             {"base_world_size", s.base_world_size}};
    if (!s.workload.empty()) {
      j["workload"] = s.workload;
      j["batch_size"] = s.batch_size;
      j["throughput"] = "samples_per_s";
    }
    j["points"] = nlohmann::ordered_json::array();
    for (const auto& p : s.points) {
      j["points"].push_back({{"world_size", p.world_size}, {"time_us", p.time_us},
                             {"throughput_gbps", p.throughput_gbps}, {"efficiency", p.efficiency}});
      if (!s.workload.empty()) j["points"].back()["samples_per_s"] = p.samples_per_s;
    }
    out.push_back(std::move(j));
  }
  return out;
}

// docs/output.md, "Busy machine": one entry per execution that started on a busy or
// oversubscribed host, with the numbers behind the words.
nlohmann::ordered_json machine_warnings_json(const JobResult& result) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& e : result.executions)
    if (auto w = host_load_warning(e.info.host_load))
      out.push_back({{"kind", e.info.host_load.oversubscribed() ? "oversubscribed" : "busy"},
                     {"exec_index", e.info.exec_index}, {"run", e.info.run}, {"backend", e.info.backend},
                     {"world_size", e.info.world_size}, {"message", *w},
                     {"host_load", nlohmann::ordered_json(to_json(e.info.host_load))}});
  return out;
}

}  // namespace

nlohmann::ordered_json make_summary_json(const JobInfo& job, const JobResult& result) {
  nlohmann::ordered_json doc;
  doc["schema_version"] = kResultsSchemaVersion;

  auto& j = doc["job"];
  j["name"] = job.experiment;
  j["file"] = job.file;
  j["output_dir"] = job.output_dir;
  j["started_at"] = job.started_at;
  j["finished_at"] = result.finished_at;
  j["host"] = job.host;
  j["commbench_version"] = job.commbench_version;
  j["world_sizes"] = world_sizes(result);
  j["backends"] = backends(job, result);
  j["environment"] = job.environment.is_null() ? nlohmann::ordered_json::object()
                                               : nlohmann::ordered_json(job.environment);
  set_clock(j["environment"], result);

  doc["experiment"] = job.experiment_json;
  doc["executions"] = nlohmann::ordered_json::array();
  for (const auto& e : result.executions) doc["executions"].push_back(e);
  doc["results"] = nlohmann::ordered_json::array();
  for (const auto& c : result.cases) doc["results"].push_back(c);
  doc["records"] = nlohmann::ordered_json::array();  // every KindRecord, tagged like results.jsonl
  for (const auto& r : result.records) {
    nlohmann::ordered_json line{{"type", r.kind}};
    for (auto& [key, value] : r.body.items()) line[key] = value;
    doc["records"].push_back(std::move(line));
  }
  doc["scaling"] = scaling_json(scaling_series(result.cases, scaling_modes(job.experiment_json)));
  doc["suite"] = suite_json(result, doc["scaling"]);
  if (!result.observability.is_null()) doc["observability"] = result.observability;
  doc["warnings"] = machine_warnings_json(result);
  doc["exit_code"] = result.exit_code;
  return doc;
}

SummaryJsonReporter::SummaryJsonReporter(std::filesystem::path output_dir)
    : output_dir_(std::move(output_dir)) {}

void SummaryJsonReporter::job_started(const JobInfo& job) {
  job_ = job;
  // An indented case record is ~2.5 KB plus ~30 bytes per sample; a disk that fills up mid-job
  // must still take the summary (docs/output.md, Faults). Capped: a huge sweep gets part of it.
  const uint64_t per_record = 3072 + 32 * static_cast<uint64_t>(std::max(job.max_samples_per_record, 0));
  const uint64_t want = 65536 + per_record * static_cast<uint64_t>(std::max(job.planned_records, 0));
  reserve_space_for(output_dir_ / kFileName, std::min<uint64_t>(want, 64ull << 20));
}

void SummaryJsonReporter::job_done(const JobResult& result) {
  const auto doc = make_summary_json(job_, result);
  write_file_atomically(
      output_dir_ / kFileName,
      doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
}

}  // namespace commbench
