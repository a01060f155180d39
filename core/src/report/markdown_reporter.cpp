#include "report/markdown_reporter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "report/comparison.h"
#include "report/device_notes.h"
#include "report/format.h"
#include "report/markdown_table.h"
#include "report/workload_markdown.h"
#include "report/observability_markdown.h"
#include "report/pair_matrix.h"
#include "report/output_file.h"
#include "report/scaling.h"
#include "report/suite_json.h"

namespace commbench {
namespace {

using Column = MarkdownColumn;

std::string cell(std::string_view text) { return markdown_cell(text); }

void append_table(std::string& md, const std::vector<Column>& columns,
                  const std::vector<std::vector<std::string>>& rows) {
  append_markdown_table(md, columns, rows);
}

std::string not_measured(const CaseRecord& r) {
  return cell(r.reason.empty() ? r.status : fmt::format("{}: {}", r.status, r.reason));
}

std::string cv_cell(const CaseRecord& r) {
  const std::string cv = format_cv_percent(r.time_us.cv) + "%";
  return is_noisy(r) ? "**" + cv + "** ⚠" : cv;
}

// Executions that started on a busy or oversubscribed host, before any number is shown.
void append_machine_warnings(std::string& md, const JobResult& result) {
  std::vector<std::string> lines;
  for (const auto& e : result.executions)
    if (auto w = host_load_warning(e.info.host_load))
      lines.push_back(fmt::format("- ⚠ exec {}/{} (run {}, {}, {}): {}", e.info.exec_index + 1, e.info.exec_total,
                                  markdown_code(e.info.run),
                                  e.info.backend, rank_count(e.info.world_size), *w));
  if (lines.empty()) return;
  md += fmt::format("## ⚠ Busy machine\n\n{} of {} executions started while this host was busy or "
                    "oversubscribed:\n\n{}\n\n",
                    lines.size(), result.executions.size(), fmt::join(lines, "\n"));
}

// GPU numbers that are not GPU performance: the simulated GPU's, and ranks sharing a GPU.
void append_device_warnings(std::string& md, const JobResult& result) {
  std::vector<std::string> lines;
  for (const auto& e : result.executions)
    if (const auto name = simulated_gpu_name(e.metadata))
      lines.push_back(fmt::format("- ⚠ exec {}/{} (run {}, {}, {}) ran on {}: its times are a CPU emulation's",
                                  e.info.exec_index + 1, e.info.exec_total, markdown_code(e.info.run), e.info.backend,
                                  rank_count(e.info.world_size), markdown_text(*name)));
  const auto shared = std::count_if(result.cases.begin(), result.cases.end(),
                                    [](const CaseRecord& r) { return r.oversubscribe_gpu; });
  if (shared > 0)
    lines.push_back(fmt::format("- ⚠ {} case(s) ran with ranks sharing a GPU (`oversubscribe_gpu`): a correctness "
                                "mode, their times are not any GPU's performance",
                                shared));
  if (lines.empty()) return;
  md += fmt::format("## ⚠ Not GPU performance\n\n{}\n\nDo not compare or publish these times as a GPU's.\n\n",
                    fmt::join(lines, "\n"));
}

void append_job_metadata(std::string& md, const JobInfo& job, const JobResult& result) {
  std::set<int> worlds;
  for (const auto& e : result.executions) worlds.insert(e.info.world_size);
  // "ucx 1.13.1 (plugin 0.1.0)": the plugin's own version alone ("ucx 0.1.0") read as the library's.
  const auto library_version = [&](const std::string& backend) -> std::string {
    for (const auto& e : result.executions) {
      if (e.info.backend != backend || !e.metadata.is_object()) continue;
      const auto ranks = e.metadata.find("ranks");
      if (ranks == e.metadata.end() || !ranks->is_object()) continue;
      for (const auto& [rank, facts] : ranks->items()) {
        const auto b = facts.is_object() ? facts.find("backend") : facts.end();
        if (!facts.is_object() || b == facts.end() || !b->is_object()) continue;
        for (const auto& [key, value] : b->items())
          if (key.size() > 8 && key.compare(key.size() - 8, 8, "_version") == 0 && value.is_string())
            return value.get<std::string>();
      }
    }
    return "";
  };
  std::vector<std::string> backends;
  if (job.plugins.is_object())
    for (auto& [name, info] : job.plugins.items()) {
      const std::string plugin = info.is_object() ? info.value("version", "") : "";
      const std::string library = library_version(name);
      const std::string plugin_text = plugin.empty() ? "" : fmt::format(" (plugin {})", plugin);
      backends.push_back(library.empty() ? name + plugin_text : fmt::format("{} {}{}", name, library, plugin_text));
    }
  md += fmt::format("# commbench results: {}\n\n", markdown_text(job.experiment));
  md += fmt::format("- **Experiment file:** {}\n", markdown_code(job.file));
  md += fmt::format("- **Started:** {}  **Finished:** {}\n", job.started_at, result.finished_at);
  md += fmt::format("- **Host:** {}\n", markdown_text(job.host));
  md += fmt::format("- **commbench:** {}\n", job.commbench_version);
  md += fmt::format("- **Backends:** {}\n",
                    backends.empty() ? "-" : fmt::format("{}", fmt::join(backends, ", ")));
  md += fmt::format("- **World sizes:** {}\n", fmt::join(worlds, ", "));
  if (result.expectations_follow)
    md += fmt::format("- **Exit code of the measurements:** {} ({}); the experiment's expectations were checked "
                      "after this file was written and can turn 0 into 1 (`commbench check` repeats them)\n",
                      result.exit_code, exit_reason(result));
  else
    md += fmt::format("- **Exit code:** {} ({})\n", result.exit_code, exit_reason(result));
  md += fmt::format("- **Output folder:** {}\n\n", markdown_code(job.output_dir));
  append_machine_warnings(md, result);
  append_device_warnings(md, result);
  md +=
      "Times are per operation in microseconds. Each table names its method and rank aggregation "
      "(docs/metrics.md): `batch` runs the iterations back to back after one synchronisation "
      "(per rank elapsed/N, ranks averaged by default, as nccl-tests); `per_iteration` "
      "synchronises every iteration and takes the slowest rank (`all_pairs`: from the sender's post "
      "to the receiver seeing the message, on one clock). `time` is the mean of that "
      "series, p50/p99 are percentiles over it, "
      "CV = stddev / mean (⚠ above 5%). algbw and busbw (decimal GB/s) follow nccl-tests and "
      "use the mean time; see docs/metrics.md.\n\n";
}

void append_executions(std::string& md, const std::vector<const ExecutionOutcome*>& execs) {
  // With `repeats`, the same backend and world size run once per repeat: say which this is.
  const bool repeated = std::any_of(execs.begin(), execs.end(), [](const ExecutionOutcome* e) { return e->info.repeats > 1; });
  std::vector<std::vector<std::string>> rows;
  for (const auto* e : execs) {
    rows.push_back({e->info.backend, fmt::format("{}", e->info.world_size), e->status,
                    fmt::format("{}/{}", e->cases_done, e->info.case_total),
                    fmt::format("{:.1f}", e->elapsed_s),
                    e->failed_rank >= 0 ? fmt::format("{}", e->failed_rank) : "-",
                    e->reason.empty() ? "-" : cell(e->reason)});
    // Counted from 1, as the console, the analysis and the plots do (the records' field is 0-based).
    if (repeated) rows.back().insert(rows.back().begin() + 2, fmt::format("{} of {}", e->info.repeat + 1, e->info.repeats));
  }
  std::vector<Column> columns{{"backend", false},     {"ranks", true},       {"status", false},
                              {"cases", true},        {"elapsed (s)", true}, {"failed rank", true},
                              {"reason", false}};
  if (repeated) columns.insert(columns.begin() + 2, {"repeat", true});
  append_table(md, columns, rows);
}

// One table per (backend, world size, op, dtype, redop, placement), in order of appearance.
void append_case_tables(std::string& md, const std::vector<const CaseRecord*>& cases) {
  using Key = std::tuple<std::string, int, std::string, std::string, std::string, std::string>;
  std::vector<std::pair<Key, std::vector<const CaseRecord*>>> groups;
  for (const auto* c : cases) {
    if (c->src >= 0) continue;  // all_pairs records: in the pair matrices
    Key key{c->backend, c->world_size, c->op, c->dtype, c->redop, c->placement};
    auto it = std::find_if(groups.begin(), groups.end(), [&](auto& g) { return g.first == key; });
    if (it == groups.end()) it = groups.insert(groups.end(), {key, {}});
    it->second.push_back(c);
  }
  for (auto& [key, members] : groups) {
    // Sizes ascending whatever order the plan ran them in (e.g. shuffled to avoid drift bias),
    // each size's repeats together and numbered.
    std::stable_sort(members.begin(), members.end(), [](const CaseRecord* a, const CaseRecord* b) {
      return std::tie(a->bytes, a->repeat) < std::tie(b->bytes, b->repeat);
    });
    const bool repeated = std::any_of(members.begin(), members.end(), [](const CaseRecord* r) { return r->repeat > 0; });
    const auto& [backend, world, op, dtype, redop, placement] = key;
    md += fmt::format("### {} · {} · {} · {} · {} · {}\n\n", backend, rank_count(world), op, or_dash(dtype),
                      or_dash(redop), placement);
    // Method and clock of the first measured case (one run has one of each).
    for (const auto* r : members)
      if (r->status == "ok") {
        md += fmt::format("Method: {}; clock: {}.{}\n\n", method_label(*r), r->timing,
                          nccl_tests_size_differs(*r)
                              ? fmt::format(" Sizes are per rank; nccl-tests prints {} × that "
                                            "(`total_bytes` in the records).", r->world_size)
                              : std::string());
        break;
      }
    // Windowed patterns (unidir_bw, bidir_bw, msg_rate) count messages: their rate gets a column.
    const bool rates = std::any_of(members.begin(), members.end(),
                                   [](const CaseRecord* r) { return r->msg_rate_mps > 0; });
    std::vector<std::vector<std::string>> rows;
    for (const auto* r : members) {
      if (r->status != "ok") {
        rows.push_back({human_size(r->bytes), fmt::format("{}", r->bytes),
                        fmt::format("{}", r->count), not_measured(*r), "-", "-", "-", "-", "-",
                        format_wrong(r->wrong)});
        if (rates) rows.back().push_back("-");
        continue;
      }
      rows.push_back({human_size(r->bytes), fmt::format("{}", r->bytes),
                      fmt::format("{}", r->count), format_time_us(r->time_us.mean),
                      format_gbps(r->algbw_gbps), format_gbps(r->busbw_gbps),
                      format_time_us(r->time_us.p50), format_time_us(r->time_us.p99),
                      cv_cell(*r) + (missed_cv_target(*r) ? " (target missed)" : ""),
                      format_wrong(r->wrong)});
      if (rates) rows.back().push_back(r->msg_rate_mps > 0 ? format_msg_rate(r->msg_rate_mps) : "-");
    }
    std::vector<Column> columns{
        {"size", true},       {"bytes", true},    {"count", true},    {"time (us)", true},
        {"algbw (GB/s)", true}, {"busbw (GB/s)", true}, {"p50 (us)", true}, {"p99 (us)", true},
        {"CV", true},         {"#wrong", true}};
    if (rates) columns.push_back({"messages/s", true});
    if (repeated) {
      columns.insert(columns.begin() + 1, {"repeat", true});
      for (size_t i = 0; i < rows.size(); ++i)
        rows[i].insert(rows[i].begin() + 1, fmt::format("{}", members[i]->repeat + 1));
    }
    append_table(md, columns, rows);
  }
}

void append_comparison(std::string& md, const std::vector<std::string>& order,
                       const std::vector<CaseRecord>& records) {
  const ComparisonSet set = compare_backends(order, records);
  if (set.backends.size() < 2) return;
  const std::string& ref = set.backends[0];
  for (const auto& t : set.tables) {
    md += fmt::format("### Comparison · {} · {} · {} · {} · {}{}\n\n", t.op, or_dash(t.dtype),
                      or_dash(t.redop), t.placement, rank_count(t.world_size), t.variant.empty() ? "" : " · " + t.variant);
    if (set.max_repeats > 1)
      md += fmt::format("With {} repeats: each backend's median repeat (by mean time).\n\n", set.max_repeats);
    std::vector<Column> columns{{"size", true}};
    for (const auto& b : set.backends) {
      columns.push_back({b + " time (us)", true});
      columns.push_back({b + " busbw (GB/s)", true});
    }
    for (size_t i = 1; i < set.backends.size(); ++i)
      columns.push_back({fmt::format("{} / {} time", set.backends[i], ref), true});
    std::vector<std::vector<std::string>> rows;
    bool any_noisy = false;
    for (const auto& row : t.rows) {
      std::vector<std::string> cells{row_label(row)};
      for (const auto* r : row.by_backend) {
        if (r && r->status == "ok") {
          cells.push_back(format_time_us(compared_time_us(*r)));
          cells.push_back(compared_busbw(*r));
        } else {
          // No record: the backend's execution ended before this case (Executions says why).
          cells.push_back(r ? cell(r->status) : "not run");
          cells.push_back("-");
        }
      }
      for (size_t i = 1; i < set.backends.size(); ++i) {
        const auto ratio = time_ratio(row, i);
        const bool noisy = ratio && (is_noisy(*row.by_backend[0]) || is_noisy(*row.by_backend[i]));
        cells.push_back(ratio ? format_ratio(*ratio) + "×" + (noisy ? " !" : "") : "-");
        any_noisy |= noisy;
      }
      rows.push_back(std::move(cells));
    }
    append_table(md, columns, rows);
    if (any_noisy) md += "A ratio marked ! compares a noisy mean (CV above 5 %): read it with care.\n\n";
  }
}

// One table per (backend, op, dtype, redop, placement, memory): a row per size, a column per
// world size with the efficiency and the time it comes from.
void append_scaling(std::string& md, const std::vector<ScalingSeries>& series) {
  std::vector<int> worlds;
  for (const auto& s : series)
    for (const auto& p : s.points)
      if (std::find(worlds.begin(), worlds.end(), p.world_size) == worlds.end()) worlds.push_back(p.world_size);
  if (series.empty()) return;
  std::sort(worlds.begin(), worlds.end());
  md += fmt::format("### Scaling efficiency ({} scaling)\n\n", scaling_name(series[0].mode));
  md += "efficiency = (throughput(N) / throughput(base)) / (N / base), base = the smallest world size "
        "measured (of 2 or more for ops: one rank communicates with no one); time in us, the case's mean (a workload's: its step p50, which samples/s comes from; "
        "docs/metrics.md).";
  const int repeats = std::max_element(series.begin(), series.end(), [](const auto& a, const auto& b) {
                        return a.repeats < b.repeats;
                      })->repeats;
  if (repeats > 1) md += fmt::format(" With {} repeats: each case's median repeat (by mean time).", repeats);
  md += "\n\n";
  std::vector<Column> columns{{"backend", false}, {"case", false}, {"size", true}, {"base", true}};
  for (int w : worlds) columns.push_back({rank_count(w), true});
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : series) {
    std::vector<std::string> cells{cell(s.backend),
                                   cell(s.workload.empty() ? fmt::format("{} {} {} {} {}", s.op, or_dash(s.dtype), or_dash(s.redop),
                                                                         short_placement(s.placement), s.memory)
                                                           : fmt::format("{} {} {} {}", s.op, s.workload, s.dtype, s.memory)),
                                   s.workload.empty() ? fmt::format("{}{}", human_size(s.bytes), s.mode == ScalingMode::Strong ? " total" : "")
                                                      : (s.mode == ScalingMode::Strong ? fmt::format("global batch {}", s.batch_size)
                                                                                      : fmt::format("batch {}/rank", s.batch_size)),
                                   std::to_string(s.base_world_size)};
    for (int w : worlds) {
      auto p = std::find_if(s.points.begin(), s.points.end(), [&](const ScalingPoint& x) { return x.world_size == w; });
      cells.push_back(p == s.points.end() ? "-"
                                          : fmt::format("{}% ({})", format_percent(p->efficiency), format_time_us(p->time_us)));
    }
    rows.push_back(std::move(cells));
  }
  append_table(md, columns, rows);
}

}  // namespace

std::string render_markdown_summary(const JobInfo& job, const JobResult& result,
                                    const std::map<int, std::vector<std::string>>& backend_order) {
  std::string md;
  append_job_metadata(md, job, result);

  std::set<int> runs;
  for (const auto& e : result.executions) runs.insert(e.info.run_index);
  for (const auto& c : result.cases) runs.insert(c.run_index);
  for (const auto& r : result.records)
    if (r.kind == kMemoryKind) runs.insert(r.body.value("run_index", 0));

  for (int run : runs) {
    std::vector<const ExecutionOutcome*> execs;
    std::vector<const CaseRecord*> cases;
    std::vector<CaseRecord> run_records;
    std::string name;
    std::vector<std::string> order;
    for (const auto& e : result.executions)
      if (e.info.run_index == run) {
        execs.push_back(&e);
        name = e.info.run;
        if (std::find(order.begin(), order.end(), e.info.backend) == order.end())
          order.push_back(e.info.backend);
      }
    std::vector<const CaseRecord*> workload_cases;  // their own table (report/workload_markdown.h)
    for (const auto& c : result.cases)
      if (c.run_index == run) {
        (c.workload.is_object() ? workload_cases : cases).push_back(&c);
        run_records.push_back(c);
        if (name.empty()) name = c.run;
      }
    std::vector<const nlohmann::ordered_json*> memory;
    for (const auto& r : result.records)
      if (r.kind == kMemoryKind && r.body.value("run_index", 0) == run) {
        memory.push_back(&r.body);
        if (name.empty()) name = r.body.value("run", std::string());
      }
    if (auto it = backend_order.find(run); it != backend_order.end()) order = it->second;

    md += fmt::format("## Run {}\n\n", markdown_code(name));
    if (!execs.empty()) append_executions(md, execs);
    append_case_tables(md, cases);
    append_workload_table(md, workload_cases);
    append_memory_table(md, memory);
    append_pair_matrices(md, cases);
    append_comparison(md, order, run_records);
    append_scaling(md, scaling_series(run_records, scaling_modes(job.experiment_json)));
  }
  append_observability_markdown(md, result);
  return md;
}

MarkdownReporter::MarkdownReporter(std::filesystem::path output_dir)
    : output_dir_(std::move(output_dir)) {}

void MarkdownReporter::job_started(const JobInfo& job) {
  job_ = job;
  // A few table rows per record (its own, comparisons, pair matrices): room for a full disk.
  const uint64_t want = 65536 + 1024 * static_cast<uint64_t>(std::max(job.planned_records, 0));
  reserve_space_for(output_dir_ / kFileName, std::min<uint64_t>(want, 16ull << 20));
}

void MarkdownReporter::run_done(const RunSpec& run, const std::vector<CaseRecord>&) {
  backend_order_[run.index] = run.backends;
}

void MarkdownReporter::job_done(const JobResult& result) {
  write_file_atomically(output_dir_ / kFileName,
                        render_markdown_summary(job_, result, backend_order_));
}

}  // namespace commbench
