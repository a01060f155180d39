#include "report/workload_markdown.h"

#include <fmt/format.h>

#include "report/markdown_table.h"

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

}  // namespace commbench
