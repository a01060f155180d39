#include "report/format.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <vector>

namespace commbench {

bool is_noisy(const CaseRecord& r) { return r.status == "ok" && r.time_us.cv > kNoisyCv; }

bool missed_cv_target(const CaseRecord& r) { return r.status == "ok" && r.target_cv > 0 && !r.cv_reached; }

std::string method_label(const CaseRecord& r) {
  // all_pairs' own sample (measure/all_pairs.h, docs/metrics.md), by its record's label.
  if (r.rank_aggregation == "sender_to_arrival")
    return "per_iteration (the receiver waiting before each transfer; from the sender's post to the receiver "
           "seeing the message)";
  if (r.method == "per_iteration" && r.src >= 0)
    return "per_iteration (the receiver waiting before each transfer; the longer of the two ranks' own times)";
  if (r.method == "per_iteration")
    return "per_iteration (synchronised start of each iteration; slowest rank per iteration)";
  const std::string ranks =
      r.rank_aggregation.rfind("rank", 0) == 0 ? fmt::format("{}'s clock", r.rank_aggregation)
                                               : fmt::format("ranks: {}", r.rank_aggregation);
  const char* how = r.method == "graph" ? "a CUDA graph of N iterations, launched once"
                                        : "N iterations back to back";
  return fmt::format("{} ({}; per rank elapsed/N, {}; p50/p99 over consecutive completions)",
                     r.method, how, ranks);
}

bool nccl_tests_size_differs(const CaseRecord& r) { return r.total_bytes != r.bytes && r.src < 0; }

std::string human_size(uint64_t bytes) {
  static constexpr std::array<const char*, 6> kUnits{"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  size_t unit = 0;
  double value = static_cast<double>(bytes);
  while (value >= 1024.0 && unit + 1 < kUnits.size()) {
    value /= 1024.0;
    ++unit;
  }
  if (value == std::floor(value)) return fmt::format("{:.0f} {}", value, kUnits[unit]);
  return fmt::format("{:.2f} {}", value, kUnits[unit]);
}

std::string format_time_us(double us) { return fmt::format("{:.2f}", us); }
namespace {
// Fixed notation with at least `digits` significant digits and at least `min_decimals` decimals:
// a busbw of 0.0059 GB/s reads "0.00591", not "0.00".
std::string significant(double v, int digits, int min_decimals) {
  if (v == 0 || !std::isfinite(v)) return fmt::format("{:.{}f}", v, min_decimals);
  const int mag = static_cast<int>(std::floor(std::log10(std::fabs(v))));
  const int decimals = std::clamp(digits - 1 - mag, min_decimals, 12);
  return fmt::format("{:.{}f}", v, decimals);
}
}  // namespace

std::string format_gbps(double gbps) { return significant(gbps, 3, 2); }
std::string format_ratio(double ratio) { return significant(ratio, 3, 0); }
std::string format_msg_rate(double mps) {
  const double per_s = mps * 1e6;
  if (per_s >= 1e9) return fmt::format("{} G", significant(per_s / 1e9, 3, 0));
  if (per_s >= 1e6) return fmt::format("{} M", significant(per_s / 1e6, 3, 0));
  if (per_s >= 1e3) return fmt::format("{} k", significant(per_s / 1e3, 3, 0));
  return significant(per_s, 3, 0);
}
std::string format_cv_percent(double cv) { return fmt::format("{:.1f}", cv * 100.0); }
std::string format_percent(double fraction) { return significant(fraction * 100.0, 3, 0); }
std::string format_wrong(int64_t wrong) { return wrong < 0 ? "-" : fmt::format("{}", wrong); }

std::string short_placement(std::string_view placement) {
  if (placement == "out_of_place") return "out";
  if (placement == "in_place") return "in";
  return std::string(placement);
}

std::string rank_count(int n) { return fmt::format("{} rank{}", n, n == 1 ? "" : "s"); }

std::string or_dash(std::string_view value) {
  return value.empty() ? "-" : std::string(value);
}

int cases_not_run(const JobResult& result) {
  int n = 0;
  for (const auto& e : result.executions)
    if (e.status != "ok") n += std::max(0, e.info.case_total - e.cases_done);
  return n;
}

std::string not_run_text(const JobResult& result, bool long_form) {
  int never_started = 0, ended_early = 0, unavailable = 0;
  for (const auto& e : result.executions) {
    if (e.status == "ok") continue;
    const int n = std::max(0, e.info.case_total - e.cases_done);
    // A backend that became unavailable after some cases was not "skipped" (a probe).
    (e.status == "skipped" ? never_started : e.status == "unavailable" ? unavailable : ended_early) += n;
  }
  std::vector<std::string> parts;
  const auto part = [&](int n, const char* one, const char* many) {
    if (n == 0) return;
    parts.push_back(long_form ? fmt::format("{} case{} not run ({})", n, n == 1 ? "" : "s", n == 1 ? one : many)
                              : fmt::format("{} not run ({})", n, n == 1 ? one : many));
  };
  part(ended_early, "its execution ended early", "their execution ended early");
  part(never_started, "its execution was skipped", "their execution was skipped");
  part(unavailable, "its backend was unavailable", "their backend was unavailable");
  return fmt::format("{}", fmt::join(parts, ", "));
}

bool measured_anything(const JobResult& result) {
  for (const auto& c : result.cases)
    if (c.status == "ok") return true;
  for (const auto& r : result.records)
    if (r.kind == "memory" && r.body.value("status", "ok") == "ok") return true;
  return false;
}

std::string failed_records_text(const JobResult& result) {
  std::map<std::string, int> failed;
  for (const auto& r : result.records)
    if (r.body.value("status", "ok") == "failed") ++failed[r.kind];
  std::vector<std::string> parts;
  for (const auto& [kind, n] : failed) parts.push_back(fmt::format("{} {} record{} failed", n, kind, n == 1 ? "" : "s"));
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::string exit_reason(const JobResult& result) {
  int failed_execs = 0, unavailable = 0, interrupted = 0, failed_cases = 0, skipped = 0, too_big = 0;
  int64_t wrong = 0;
  for (const auto& e : result.executions) {
    if (e.status == "failed") ++failed_execs;
    if (e.status == "unavailable") ++unavailable;
    if (e.status == "interrupted") ++interrupted;
    if (e.status == "skipped") ++skipped;
  }
  int64_t measured = 0, checked = 0;
  for (const auto& c : result.cases) {
    // Workload steps have no result check of their own: they are neither.
    const bool op_case = c.workload.is_null();
    if (op_case && c.status == "ok") ++measured;
    if (op_case && c.status == "ok" && c.wrong >= 0) ++checked;
    if (c.status == "failed") ++failed_cases;
    if (c.status == "skipped") ++too_big;
    if (c.wrong > 0) wrong += c.wrong;
  }
  std::vector<std::string> why;
  auto plural = [](int64_t n, const char* one, const char* many) {
    return fmt::format("{} {}", n, n == 1 ? one : many);
  };
  // Exit 1 with no failure behind it: the job measured nothing (job_runner.cpp), said first.
  if (result.exit_code == 1 && !measured_anything(result) && failed_execs == 0 && failed_cases == 0 && wrong == 0 &&
      failed_records_text(result).empty()) {
    int unsupported = 0;
    for (const auto& c : result.cases) unsupported += c.status == "unsupported";
    why.push_back("nothing was measured");
    if (unsupported) why.push_back(plural(unsupported, "case unsupported by its backend", "cases unsupported by their backends"));
  }
  if (failed_execs) why.push_back(plural(failed_execs, "execution failed", "executions failed"));
  if (interrupted)
    why.push_back(plural(interrupted, "execution interrupted", "executions interrupted"));
  if (unavailable)
    why.push_back(plural(unavailable, "backend unavailable", "backend executions unavailable"));
  if (skipped) why.push_back(plural(skipped, "execution skipped", "executions skipped"));
  if (too_big) why.push_back(plural(too_big, "case skipped (does not fit in memory)", "cases skipped (do not fit in memory)"));
  if (failed_cases) why.push_back(plural(failed_cases, "case failed", "cases failed"));
  // Records of other kinds that failed (a memory workload's batch size out of memory) fail the job too.
  if (std::string records = failed_records_text(result); !records.empty()) why.push_back(std::move(records));
  if (const std::string not_run = not_run_text(result, true); !not_run.empty()) why.push_back(not_run);
  if (wrong)
    why.push_back(plural(wrong, "mismatched element (#wrong)", "mismatched elements (#wrong)"));
  // "every check passed" only when checks ran: check = false measures without checking.
  // No op case measured (a workload-only job, whose steps have no result check): no claim.
  const std::string checks = measured == 0         ? ""
                             : checked == measured ? " and every check passed"
                             : checked == 0        ? " and results not checked (check = false)"
                                                   : fmt::format(" and every check passed ({} of {} measured cases checked)",
                                                                 checked, measured);
  // With notes, the checks are one more: "1 of 2 measured cases checked" was dropped beside them.
  if (result.exit_code == 0 && !why.empty() && !checks.empty()) why.push_back(checks.substr(5));  // " and "
  if (result.exit_code == 0)
    return why.empty() ? "every execution completed" + checks
                       : fmt::format("success, with notes: {}", fmt::join(why, "; "));
  return why.empty() ? "see the messages above" : fmt::format("{}", fmt::join(why, "; "));
}

}  // namespace commbench
