#include "report/workload_markdown.h"

#include <fmt/format.h>

#include "report/markdown_table.h"
#include "report/memory_figures.h"

namespace commbench {

void append_workload_table(std::string& md, const std::vector<const CaseRecord*>& cases) {
  std::vector<std::vector<std::string>> rows;
  for (const CaseRecord* r : cases) {
    if (!r->workload.is_object()) continue;
    const nlohmann::json& w = r->workload;
    std::vector<std::string> row{markdown_cell(r->backend), std::to_string(r->world_size),
                                 markdown_cell(w.value("model", std::string("?"))),
                                 w.value("sharding", std::string("?")), w.value("overlap", false) ? "on" : "off",
                                 std::to_string(w.value("batch_size", 0))};
    if (r->status != "ok") {
      row.push_back(markdown_cell(fmt::format("{}: {}", r->status, r->reason)));
      for (int i = 0; i < 6; ++i) row.push_back("-");
    } else {
      auto ms = [&](const char* k, const char* q) { return fmt::format("{:.3f}", w[k].value(q, 0.0)); };
      row.push_back(ms("step_ms", "p50"));
      row.push_back(ms("step_ms", "p99"));
      row.push_back(ms("compute_ms", "p50"));
      row.push_back(ms("comm_ms", "p50"));
      row.push_back(fmt::format("{:.3f}", w.value("exposed_comm_ms", 0.0)));
      row.push_back(w["overlap_efficiency"].is_number()
                        ? fmt::format("{:.1f}%", w["overlap_efficiency"].get<double>() * 100) : "-");
      row.push_back(fmt::format("{:.1f}", w.value("samples_per_s", 0.0)));
    }
    rows.push_back(std::move(row));
  }
  if (rows.empty()) return;
  md += "### Workload steps\n\n";
  md += "Milliseconds, per step the slowest rank; exposed = whole step − compute-only step of the same round "
        "(median); efficiency = 1 − exposed / comm, in [0, 1]; samples/s = batch × ranks / step p50 "
        "(docs/workloads.md).\n\n";
  append_markdown_table(md,
                        {{"backend", false}, {"ranks", true}, {"model", false}, {"sharding", false},
                         {"overlap", false}, {"batch/rank", true}, {"step p50", true}, {"step p99", true},
                         {"compute p50", true}, {"comm p50", true}, {"exposed", true}, {"efficiency", true},
                         {"samples/s", true}},
                        rows);
}

void append_memory_table(std::string& md, const std::vector<const nlohmann::ordered_json*>& memory) {
  std::vector<std::vector<std::string>> rows;
  bool step_run = false, model_run = false;
  for (const nlohmann::ordered_json* j : memory) {
    const MemoryFigures f = memory_figures(*j);
    (f.step_run ? step_run : model_run) = true;
    auto text = [&](const char* k) { return markdown_cell(j->value(k, std::string("?"))); };
    std::vector<std::string> row{markdown_cell(j->value("backend", std::string("?"))),
                                 std::to_string(j->value("world_size", 0)),
                                 text("workload"), text("model"), text("sharding"), text("dtype"), text("optimizer"),
                                 text("memory"), std::to_string(f.batch_size),
                                 fmt::format("{:.1f}", f.model_state_mib), fmt::format("{:.1f}", f.activations_mib),
                                 fmt::format("{:.1f}", f.total_mib)};
    if (f.status != "ok") {
      row.push_back(markdown_cell(fmt::format("{}: {}", f.status, f.reason)));
      for (int i = 0; i < 3; ++i) row.push_back("-");
    } else {
      row.push_back(fmt::format("{:.1f}", f.measured_state_mib));
      row.push_back(fmt::format("{:.1f}", f.measured_total_mib));
      row.push_back(fmt::format("{:.1f}", f.backend_mib));
      row.push_back(f.device ? "cudaMemGetInfo" : "host RSS");
    }
    rows.push_back(std::move(row));
  }
  if (rows.empty()) return;
  md += "### Memory\n\n";
  md += "MiB per rank: computed (model state, activations, total) next to measured, the largest over ranks";
  if (model_run) md += "; a `memory` run measures the model state's buffers (state) and state + activations (total)";
  if (step_run)
    md += "; a `data_parallel` run allocates no model state: state is its compute's buffers, total what the run held "
          "at its fullest";
  md += " (docs/workloads.md, *Memory*).\n\n";
  append_markdown_table(md,
                        {{"backend", false}, {"ranks", true}, {"workload", false}, {"model", false},
                         {"sharding", false}, {"dtype", false}, {"optimizer", false}, {"memory", false},
                         {"batch/rank", true}, {"model state", true}, {"activations", true}, {"total", true},
                         {"meas. state", true}, {"meas. total", true}, {"backend", true}, {"measured by", false}},
                        rows);
}

}  // namespace commbench
