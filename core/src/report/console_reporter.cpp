#include "report/console_reporter.h"

#include <algorithm>

#include <fmt/format.h>
#include <unistd.h>

#include "report/comparison.h"
#include "report/device_notes.h"
#include "report/format.h"
#include "report/memory_figures.h"
#include "report/scaling.h"
#include "report/suite_json.h"

namespace commbench {
namespace {

// Column widths of the per-execution table; rows and headers share them so they line up.
constexpr int kOp = 15, kSize = 12, kCount = 12, kType = 7, kRedop = 6, kPlace = 6, kTime = 11,
              kBw = 12, kWrong = 7, kPct = 11, kCv = 7, kRate = 10;

std::string table_header() {
  return fmt::format(
      "#{:>{}}{:>{}}{:>{}}{:>{}}{:>{}}{:>{}}{:>{}}{:>{}}{:>{}}{:>{}}{:>{}}{:>{}}{:>{}}{:>{}}", "op",
      kOp - 1, "size(B)", kSize, "count", kCount, "type", kType, "redop", kRedop, "place", kPlace,
      "time(us)", kTime, "algbw(GB/s)", kBw, "busbw(GB/s)", kBw, "#wrong", kWrong, "p50(us)", kPct,
      "p99(us)", kPct, "msg/s", kRate, "CV%", kCv);
}

// A number right-aligned in its column, and a blank before it where it fills the column, so a
// 13-digit size never runs into its neighbour.
std::string cell(const std::string& text, int width);
std::string number_column(uint64_t v, int width) { return cell(std::to_string(v), width); }

// Text right-aligned in its column, with a blank before it where it fills the column: a time of
// 6 digits or a tiny bandwidth must not run into its neighbour (a script splits on blanks).
std::string cell(const std::string& text, int width) {
  return static_cast<int>(text.size()) >= width ? " " + text : fmt::format("{:>{}}", text, width);
}

// The identifying columns every row starts with.
std::string row_prefix(const CaseRecord& r) {
  // all_pairs rows name their pair where the op would be: the op is in the table's context.
  const std::string op = r.src >= 0 ? fmt::format("pair {}->{}", r.src, r.dst) : r.op;
  return cell(op, kOp) + number_column(r.bytes, kSize) + number_column(r.count, kCount) + cell(or_dash(r.dtype), kType) +
         cell(or_dash(r.redop), kRedop) + cell(short_placement(r.placement), kPlace);
}

std::string case_row(const CaseRecord& r) {
  if (r.status != "ok")
    return fmt::format("{}  {}: {}", row_prefix(r), r.status, r.reason.empty() ? "-" : r.reason);
  // "!" right after CV marks a noisy case; the legend is printed after the table.
  // msg/s: the windowed patterns' message rate (docs/metrics.md); "-" where messages are not counted.
  return row_prefix(r) + cell(format_time_us(r.time_us.mean), kTime) + cell(format_gbps(r.algbw_gbps), kBw) +
         cell(format_gbps(r.busbw_gbps), kBw) + cell(format_wrong(r.wrong), kWrong) +
         cell(format_time_us(r.time_us.p50), kPct) + cell(format_time_us(r.time_us.p99), kPct) +
         cell(r.msg_rate_mps > 0 ? format_msg_rate(r.msg_rate_mps) : "-", kRate) +
         cell(format_cv_percent(r.time_us.cv), kCv) + (is_noisy(r) ? " !" : "");
}

std::string count_of(int n, const char* noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}
std::string ranks(int n) { return rank_count(n); }

}  // namespace

ConsoleReporter::ConsoleReporter(std::FILE* out, std::FILE* progress, ProgressMode mode)
    : out_(out), progress_(progress) {
  switch (mode) {
    case ProgressMode::Always:
      progress_enabled_ = progress_ != nullptr;
      break;
    case ProgressMode::Never:
      progress_enabled_ = false;
      break;
    case ProgressMode::Auto:
      progress_enabled_ = progress_ != nullptr && ::isatty(::fileno(progress_)) == 1;
      break;
  }
}

void ConsoleReporter::print(const std::string& line) {
  clear_progress();
  fmt::print(out_, "{}\n", line);
  std::fflush(out_);  // lines appear as measured, also when stdout is a pipe or a file
}

void ConsoleReporter::show_progress(const std::string& text) {
  if (!progress_enabled_) return;
  // \r back to column 0, ESC[K erases the previous (possibly longer) line.
  fmt::print(progress_, "\r\x1b[K{}", text);
  std::fflush(progress_);
  progress_visible_ = true;
}

void ConsoleReporter::clear_progress() {
  if (!progress_visible_) return;
  fmt::print(progress_, "\r\x1b[K");
  std::fflush(progress_);
  progress_visible_ = false;
}

void ConsoleReporter::job_started(const JobInfo& job) {
  output_dir_ = job.output_dir;
  print(fmt::format("# commbench {} | experiment '{}' ({}) | host {} | {}", job.commbench_version,
                    job.experiment, job.file, job.host, job.started_at));
  print(fmt::format("# results: {}", job.output_dir));
}

// The estimate assumes the executions left take as long as the ones done: the plan's order, not
// its sizes, so it says "~".
std::string ConsoleReporter::elapsed_and_eta() const {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - job_start_).count();
  const double per_exec = exec_.case_total > 0 ? static_cast<double>(cases_seen_) / exec_.case_total : 0;
  const double done = exec_.exec_total > 0 ? (exec_.exec_index + per_exec) / exec_.exec_total : 0;
  if (!(done > 0.0)) return fmt::format(" | {:.0f} s elapsed", elapsed);
  return fmt::format(" | {:.0f} s elapsed, ~{:.0f} s left", elapsed, elapsed / done - elapsed);
}

void ConsoleReporter::execution_started(const ExecutionInfo& exec) {
  exec_ = exec;
  cases_seen_ = 0;
  exec_has_noisy_ = false;
  table_context_.clear();
  print("#");
  print(fmt::format("# [exec {}/{}] run '{}'{} | backend {} | {} | {}", exec.exec_index + 1,
                    exec.exec_total, exec.run,
                    exec.repeats > 1 ? fmt::format(" (repeat {}/{})", exec.repeat + 1, exec.repeats) : "",
                    exec.backend, ranks(exec.world_size), count_of(exec.case_total, "case")));
  if (auto warning = host_load_warning(exec.host_load)) print(fmt::format("# WARNING: {}", *warning));
  show_progress(fmt::format("[exec {}/{}] {}, {} — starting{}", exec.exec_index + 1, exec.exec_total,
                            exec.backend, ranks(exec.world_size), elapsed_and_eta()));
}

// A workload record (docs/workloads.md): its own table, the step's figures in milliseconds.
void ConsoleReporter::workload_done(const CaseRecord& r) {
  const nlohmann::json& w = r.workload;
  const std::string context = fmt::format(
      "# workload {} ({} parameters) {} | batch {}/rank | dtype {} | memory {} | per step the slowest rank; "
      "exposed = step - compute-only step, paired per round; efficiency = 1 - exposed/comm (docs/workloads.md)",
      w.value("model", std::string("?")), w.value("parameters", uint64_t{0}), w.value("sharding", std::string("?")),
      w.value("batch_size", 0), r.dtype, r.memory);
  if (context != table_context_) {
    table_context_ = context;
    print(context);
    print(fmt::format("# {:>7} {:>12} {:>12} {:>12} {:>12} {:>12} {:>10} {:>12}", "overlap", "step p50(ms)",
                      "step p99(ms)", "compute(ms)", "comm(ms)", "exposed(ms)", "efficiency", "samples/s"));
  }
  if (r.status != "ok") {
    print(fmt::format("  {:>7} {}: {}", "-", r.status, r.reason));
    return;
  }
  auto ms = [&](const char* k, const char* q) { return w[k].value(q, 0.0); };
  const std::string eff = w["overlap_efficiency"].is_number()
                              ? fmt::format("{:.1f}%", w["overlap_efficiency"].get<double>() * 100) : "-";
  print(fmt::format("  {:>7} {:>12.3f} {:>12.3f} {:>12.3f} {:>12.3f} {:>12.3f} {:>10} {:>12.1f}",
                    w.value("overlap", false) ? "on" : "off", ms("step_ms", "p50"), ms("step_ms", "p99"),
                    ms("compute_ms", "p50"), ms("comm_ms", "p50"), w.value("exposed_comm_ms", 0.0), eff,
                    w.value("samples_per_s", 0.0)));
}

// A memory record (docs/workloads.md, "Memory"): computed next to measured, in MiB; the device's
// figures with memory = "cuda", else host RSS.
void ConsoleReporter::record_done(const KindRecord& rec) {
  if (rec.kind != kMemoryKind) return;
  const auto& j = rec.body;
  const MemoryFigures f = memory_figures(j);
  const std::string context = fmt::format(
      "# memory{} {} | {} | dtype {} | optimizer {} | {} | computed per rank vs measured ({}, largest over "
      "ranks) in MiB (docs/workloads.md)",
      f.step_run ? " of the data_parallel run" : "", j.value("model", std::string("?")), j.value("sharding", std::string("?")), j.value("dtype", std::string("?")),
      j.value("optimizer", std::string("?")), j.value("memory", std::string("?")),
      f.device ? "cudaMemGetInfo" : "host RSS");
  if (context != table_context_) {
    table_context_ = context;
    print(context);
    print(fmt::format("# {:>6} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}", "batch", "model state", "activations",
                      "total", f.step_run ? "meas. comp." : "meas. state",
                      f.step_run ? "meas. run" : "meas. total", "backend"));
  }
  std::string line = fmt::format("  {:>6} {:>12.1f} {:>12.1f} {:>12.1f} {:>12.1f} {:>12.1f} {:>12.1f}",
                                 f.batch_size, f.model_state_mib, f.activations_mib, f.total_mib,
                                 f.measured_state_mib, f.measured_total_mib, f.backend_mib);
  if (f.status != "ok") line += fmt::format("  {}: {}", f.status, f.reason);
  print(line);
}

void ConsoleReporter::case_done(const CaseRecord& r) {
  ++cases_seen_;
  if (r.workload.is_object()) {
    workload_done(r);
    return;
  }
  // Memory, method, clock and size convention label the numbers below them; repeat the header
  // if they change.
  std::string context = fmt::format(
      "# memory {}{} | method {} | clock {} | time = mean of the series",
      r.memory,
      r.staging.empty() ? "" : fmt::format(" (staged through {} buffers, copies timed)", r.staging),
      r.status == "ok" ? method_label(r) : r.method, r.timing);
  if (nccl_tests_size_differs(r))
    context += fmt::format("\n# size(B) = per-rank size; nccl-tests prints {} x that (total_bytes in the records)",
                           r.world_size);
  if (context != table_context_) {
    table_context_ = context;
    print(context);
    print(table_header());
  }
  exec_has_noisy_ = exec_has_noisy_ || is_noisy(r);
  print(case_row(r));
  show_progress(fmt::format("[exec {}/{}] {} {} {} {} — case {}/{}{}", exec_.exec_index + 1,
                            exec_.exec_total, r.backend, r.op, human_size(r.bytes), or_dash(r.dtype),
                            cases_seen_, exec_.case_total, elapsed_and_eta()));
}

void ConsoleReporter::execution_done(const ExecutionOutcome& o) {
  if (exec_has_noisy_)
    print(fmt::format("# ! = CV above {:.0f}%: timings vary; add iterations or quiet the machine",
                      kNoisyCv * 100));
  exec_has_noisy_ = false;  // once: an execution never started (no execution_started) adds no note
  const std::string where =
      fmt::format("run '{}', backend {}, {}", o.info.run, o.info.backend, ranks(o.info.world_size));
  const std::string rank = o.failed_rank >= 0 ? fmt::format(" (rank {})", o.failed_rank) : "";
  if (o.status == "ok" && o.info.case_total == 0)  // a memory workload: records of its own kind
    print(fmt::format("# done in {:.1f} s", o.elapsed_s));
  else if (o.status == "ok")
    print(fmt::format("# done: {}/{} cases in {:.1f} s", o.cases_done, o.info.case_total,
                      o.elapsed_s));
  else if (o.status == "unavailable")
    print(fmt::format("# UNAVAILABLE: {}: {}{} — skipped", where, o.reason, rank));
  else if (o.status == "skipped")
    print(fmt::format("# SKIPPED: {}: {}", where, o.reason));
  else
    print(fmt::format("# {}: {}: {}{} — after {}/{} cases, {:.1f} s",
                      o.status == "interrupted" ? "INTERRUPTED" : "FAILED", where, o.reason, rank,
                      o.cases_done, o.info.case_total, o.elapsed_s));
  // The simulated GPU of the tests (tests/simgpu) names itself; its times are a CPU emulation's.
  if (const auto name = simulated_gpu_name(o.metadata))
    print(fmt::format("# GPU: {}: these times are not GPU performance", *name));
}

void ConsoleReporter::run_done(const RunSpec& run, const std::vector<CaseRecord>& records) {
  print_comparison(run, records);
  print_scaling(run, records);
}

void ConsoleReporter::print_scaling(const RunSpec& run, const std::vector<CaseRecord>& records) {
  const auto series = scaling_series(records, {{run.index, run.scaling}});
  if (series.empty()) return;
  print("#");
  const int repeats = std::max_element(series.begin(), series.end(), [](const auto& a, const auto& b) {
                        return a.repeats < b.repeats;
                      })->repeats;
  print(fmt::format("# Scaling efficiency for run '{}': (throughput(N) / throughput(base)) / (N / base){}", run.name,
                    repeats > 1 ? fmt::format("; with {} repeats, each case's median repeat (by mean time)", repeats)
                                : std::string()));
  for (const auto& s : series) {
    std::string line = s.workload.empty()
                           ? fmt::format("# {} {} {} {} {} {}: {}", s.backend, s.op, or_dash(s.dtype), or_dash(s.redop),
                                         short_placement(s.placement), s.memory, describe_scaling(s))
                           : fmt::format("# {} {} {} {}: {}", s.backend, s.op, s.dtype, s.memory, describe_scaling(s));
    for (const auto& p : s.points)
      line += s.workload.empty()
                  ? fmt::format(" | {} rank{} {} us {}%", p.world_size, p.world_size == 1 ? "" : "s",
                                format_time_us(p.time_us), format_percent(p.efficiency))
                  : fmt::format(" | {} rank{} {} samples/s {}%", p.world_size, p.world_size == 1 ? "" : "s",
                                format_ratio(p.samples_per_s), format_percent(p.efficiency));
    print(line);
  }
}

void ConsoleReporter::print_comparison(const RunSpec& run, const std::vector<CaseRecord>& records) {
  const ComparisonSet set = compare_backends(run.backends, records);
  if (set.backends.size() < 2 || set.tables.empty()) return;
  const std::string& ref = set.backends[0];
  print("#");
  print(
      fmt::format("# Comparison for run '{}': time (us) and busbw (GB/s) per backend; "
                  "ratio = backend time / {} time (! : one of the two means is noisy, CV > 5 %){}",
                  run.name, ref, repeats_note(set)));
  for (const auto& t : set.tables) {
    print(fmt::format("# {} {} {} {}, {}{}", t.op, or_dash(t.dtype), or_dash(t.redop),
                      short_placement(t.placement), ranks(t.world_size), t.variant.empty() ? "" : ", " + t.variant));
    std::string header = fmt::format("#{:>{}}", "size(B)", kSize - 1);
    for (const auto& b : set.backends)
      header += fmt::format("{:>{}}{:>{}}", b + " time", kBw + 2, b + " busbw", kBw + 2);
    for (size_t i = 1; i < set.backends.size(); ++i)
      header += fmt::format("{:>{}}", set.backends[i] + "/" + ref, kBw + 2);
    print(header);
    for (const auto& row : t.rows) {
      std::string line = fmt::format("{:>{}}", row.bytes, kSize);
      if (row.src >= 0) line = fmt::format("{:>{}}", fmt::format("{} {}->{}", row.bytes, row.src, row.dst), kSize);
      for (const auto* r : row.by_backend) {
        if (r && r->status == "ok")
          line += cell(format_time_us(compared_time_us(*r)), kBw + 2) + cell(compared_busbw(*r), kBw + 2);
        else  // no record: the backend's execution ended before this case (its reason is above)
          line += cell(r ? r->status : "not run", kBw + 2) + cell("-", kBw + 2);
      }
      for (size_t i = 1; i < set.backends.size(); ++i) {
        const auto ratio = time_ratio(row, i);
        // "!" as in the tables above: a ratio of means of which one is noisy (CV > 5 %).
        const bool noisy = ratio && (is_noisy(*row.by_backend[0]) || is_noisy(*row.by_backend[i]));
        line += cell(ratio ? format_ratio(*ratio) + "x" + (noisy ? "!" : "") : "-", kBw + 2);
      }
      print(line);
    }
  }
}

void ConsoleReporter::job_done(const JobResult& result) {
  int ok_execs = 0, ok_cases = 0, unsupported = 0, skipped = 0, noisy = 0, with_target = 0, missed = 0;
  int64_t wrong = 0;
  for (const auto& e : result.executions) ok_execs += e.status == "ok";
  const int not_run = cases_not_run(result);
  for (const auto& c : result.cases) {
    ok_cases += c.status == "ok";
    unsupported += c.status == "unsupported";
    skipped += c.status == "skipped";
    noisy += is_noisy(c);
    with_target += c.status == "ok" && c.target_cv > 0;
    missed += missed_cv_target(c);
    if (c.wrong > 0) wrong += c.wrong;
  }
  const int execs = static_cast<int>(result.executions.size());
  const int cases = static_cast<int>(result.cases.size());
  // A memory workload's failed batch is no case: said here, or the line reads "0 failed" beside exit 1.
  const std::string records = failed_records_text(result);
  print("#");
  print(fmt::format(
      "# Summary: {} ({} ok, {} not ok) | {} ({} ok, {} unsupported, {}{} failed{}) | "
      "{}#wrong {} | {} with CV > {:.0f}%",
      count_of(execs, "execution"), ok_execs, execs - ok_execs, count_of(cases + not_run, "case"), ok_cases,
      unsupported, skipped ? fmt::format("{} skipped (too big), ", skipped) : "",
      cases - ok_cases - unsupported - skipped,
      not_run ? ", " + not_run_text(result, false) : "", records.empty() ? "" : records + " | ", wrong,
      count_of(noisy, "case"), kNoisyCv * 100));
  int busy = 0;
  for (const auto& e : result.executions) busy += host_load_warning(e.info.host_load).has_value();
  if (busy > 0)
    print(fmt::format("# WARNING: {} of {} started on a busy or oversubscribed machine: their times include "
                      "waiting for a CPU (summary.md, \"Busy machine\")",
                      busy, count_of(execs, "execution")));
  if (with_target > 0)
    print(fmt::format("# target_cv: {} with a target, {} reached it, {} missed it (capped by max_iterations or max_time)",
                      count_of(with_target, "case"), with_target - missed, missed));
  print(fmt::format("# Results in: {}", output_dir_));
  if (result.expectations_follow)  // the final exit code is printed after them (cli/commands.cpp)
    print(fmt::format("# Measurements: {}; the expectations below decide the exit code", exit_reason(result)));
  else
    print(fmt::format("# Exit code {}: {}", result.exit_code, exit_reason(result)));
}

}  // namespace commbench
