// Number and label formatting shared by the human-readable reporters (console, Markdown), so
// both print the same thing for the same record.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "measure/case_record.h"
#include "report/reporter.h"

namespace commbench {

// Cases whose coefficient of variation is above this are flagged (seed 003 asks for CV < 5%).
inline constexpr double kNoisyCv = 0.05;

bool is_noisy(const CaseRecord& r);  // measured, and CV above kNoisyCv
bool missed_cv_target(const CaseRecord& r);  // measured with a target_cv it did not reach
// How the record's time was taken, for table headers: "batch (ranks: avg; p50/p99 over
// consecutive completions)", "per_iteration (slowest rank per iteration)", ...
std::string method_label(const CaseRecord& r);
// Ops whose nccl-tests size is n x the per-rank size (allgather, reducescatter, ...).
bool nccl_tests_size_differs(const CaseRecord& r);

// 1023 -> "1023 B", 4096 -> "4 KiB", 10'000'000 -> "9.54 MiB" (binary units: KiB = 1024 B).
std::string human_size(uint64_t bytes);
std::string format_time_us(double us);                    // "1234.57"
std::string format_gbps(double gbps);                     // "12.35", "0.00591" (never "0.00")
// A ratio with three significant digits whatever its size: "0.00102", "1.50", "1020".
std::string format_ratio(double ratio);
// Messages per second from msg_rate_mps (millions/s): "1.23 M", "456 k".
std::string format_msg_rate(double mps);
std::string format_cv_percent(double cv);                 // 0.0234 -> "2.3"
std::string format_percent(double fraction);              // 0.651 -> "65.1", 31.7 -> "3170" (never an exponent)
std::string format_wrong(int64_t wrong);                  // -1 (not checked) -> "-"
std::string short_placement(std::string_view placement);  // "out_of_place" -> "out"
// "-" for a field that does not apply to a case (a barrier's dtype, a non-reduction's redop).
std::string or_dash(std::string_view value);
std::string rank_count(int n);                            // "1 rank", "4 ranks"

// Cases of executions that did not complete (failed, interrupted, skipped, unavailable) that were
// never measured: planned minus recorded.
int cases_not_run(const JobResult& result);
// "6 not run (their execution ended early)", "4 not run (their execution was skipped)", both
// joined by ", " when both, or "" (skipped and unavailable executions never started).
std::string not_run_text(const JobResult& result, bool long_form);
// Why the job ends with its exit code, in words: "1 execution failed; 12 mismatched elements".
// Whether the job measured anything: a case (op or workload step) `ok`, or a memory record `ok`.
bool measured_anything(const JobResult& result);
// "1 memory record failed; ..." for records other than cases whose status is "failed"; "" when none.
std::string failed_records_text(const JobResult& result);
std::string exit_reason(const JobResult& result);

}  // namespace commbench
