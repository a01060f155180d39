#include "report/csv_reporter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace commbench {
namespace {

// Shortest text that reads back as the same double (fmt's default), so no precision is lost.
std::string number(double v) { return fmt::format("{}", v); }

}  // namespace

const std::vector<std::string>& CsvReporter::columns() {
  static const std::vector<std::string> kColumns{
      "experiment",  "run",         "backend",     "world_size",  "op",          "bytes",
      "count",       "dtype",       "redop",       "placement",   "memory",      "root",
      "status",      "reason",      "timing",      "warmup",      "iterations",  "time_us_mean",
      "time_us_min", "time_us_p50", "time_us_p95", "time_us_p99", "time_us_max", "time_us_stddev",
      "time_us_cv",  "algbw_gbps",  "busbw_gbps",  "wrong",       "src",         "dst",
      "msg_rate_mps", "staging",     "method",      "rank_aggregation", "total_bytes",
      "target_cv",   "cv_reached",  "repeat",      "oversubscribe_gpu", "cpu_binding", "peers",
      "window",      "options",     "env",         "job_bytes",   "workload"};
  return kColumns;
}

std::string csv_row(const CaseRecord& r) {
  // Cases that were not measured leave the numeric columns empty: pandas reads NaN, which
  // aggregations skip, where a 0 would silently drag means down.
  const bool measured = r.status == "ok";
  auto measured_number = [&](double v) { return measured ? number(v) : std::string(); };
  const auto& t = r.time_us;
  const std::vector<std::string> fields{
      csv_field(r.experiment), csv_field(r.run), csv_field(r.backend),
      fmt::format("{}", r.world_size), csv_field(r.op), fmt::format("{}", r.bytes),
      fmt::format("{}", r.count), csv_field(r.dtype), csv_field(r.redop), csv_field(r.placement),
      csv_field(r.memory), fmt::format("{}", r.root), csv_field(r.status), csv_field(r.reason),
      csv_field(r.timing), fmt::format("{}", r.warmup), fmt::format("{}", r.iterations),
      measured_number(t.mean), measured_number(t.min), measured_number(t.p50),
      measured_number(t.p95), measured_number(t.p99), measured_number(t.max),
      measured_number(t.stddev), measured_number(t.cv), measured_number(r.algbw_gbps),
      measured_number(r.busbw_gbps),
      // -1 means "not checked": empty, so that a sum of the column counts real mismatches only.
      r.wrong < 0 ? std::string() : fmt::format("{}", r.wrong),
      // Columns appended after schema 1's first release (additive, docs/output.md).
      r.src < 0 ? std::string() : fmt::format("{}", r.src),
      r.dst < 0 ? std::string() : fmt::format("{}", r.dst),
      measured && r.msg_rate_mps > 0 ? number(r.msg_rate_mps) : std::string(),
      csv_field(r.staging), csv_field(r.method), csv_field(r.rank_aggregation),
      fmt::format("{}", r.total_bytes),
      // Empty when the run set no target_cv.
      r.target_cv > 0 ? number(r.target_cv) : std::string(),
      r.target_cv > 0 && measured ? std::string(r.cv_reached ? "true" : "false") : std::string(),
      fmt::format("{}", r.repeat),
      // "true" only for a correctness run of ranks sharing a GPU: its times are not performance.
      r.oversubscribe_gpu ? std::string("true") : std::string(),
      csv_field(r.cpu_binding),
      // Compact JSON for the structured ones; empty where the op or the run has none.
      r.peers.empty() ? std::string() : csv_field(nlohmann::json(r.peers).dump()),
      r.window > 0 ? fmt::format("{}", r.window) : std::string(),
      r.options.empty() ? std::string() : csv_field(nlohmann::json(r.options).dump()),
      r.env.empty() ? std::string() : csv_field(nlohmann::json(r.env).dump()),
      r.job_bytes > 0 ? fmt::format("{}", r.job_bytes) : std::string(),
      // A data_parallel step's own figures (overlap, samples/s, ...): without them two steps that
      // differ only in overlap read alike. Keys sorted (nlohmann's object order).
      r.workload.is_null() ? std::string() : csv_field(r.workload.dump())};
  return fmt::format("{}", fmt::join(fields, ","));
}

CsvReporter::CsvReporter(const std::filesystem::path& output_dir) : file_(output_dir / kFileName) {
  std::vector<std::string> header;
  for (const auto& c : columns()) header.push_back(csv_field(c));
  file_.write_line(fmt::format("{}", fmt::join(header, ",")));
}

void CsvReporter::case_done(const CaseRecord& record) { file_.write_line(csv_row(record)); }

}  // namespace commbench
