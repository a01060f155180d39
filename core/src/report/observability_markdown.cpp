#include "report/observability_markdown.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/format.h"
#include "report/markdown_table.h"

namespace commbench {
namespace {

std::string range(const nlohmann::json& t, const char* key) {
  if (!t.contains(key)) return "-";
  const double lo = t[key].value("min", 0.0), hi = t[key].value("max", 0.0);
  return lo == hi ? fmt::format("{:g}", lo) : fmt::format("{:g}–{:g}", lo, hi);
}

}  // namespace

void append_observability_markdown(std::string& md, const JobResult& result) {
  const nlohmann::json& o = result.observability;
  bool any_case = false;
  for (const auto& c : result.cases) any_case |= !c.telemetry.is_null();
  if (!o.is_object() || (!o.contains("telemetry") && !o.contains("thermal_warmups") && !o.contains("idle_checks") && !any_case))
    return;
  md += "## Observability\n\n";
  if (o.contains("idle_checks"))
    for (const auto& check : o["idle_checks"])
      for (const auto& w : check.value("warnings", nlohmann::json::array()))
        md += fmt::format("- ⚠ before run `{}`: {}\n", check.value("run", ""), w.get<std::string>());
  if (o.contains("thermal_warmups"))
    for (const auto& w : o["thermal_warmups"]) {
      const bool reached = w.value("reached", true);
      md += fmt::format("- {}thermal warm-up before execution {} ({}): {:.1f} s{}\n", reached ? "" : "⚠ ",
                        w.value("execution", -1), w.value("reason", ""), w.value("duration_s", 0.0),
                        w.contains("target_c") ? fmt::format(", target {:g} C {}", w.value("target_c", 0.0),
                                                             reached ? "reached" : "NOT reached")
                                               : "");
    }
  if (o.contains("telemetry")) {
    const auto& t = o["telemetry"];
    md += fmt::format("- telemetry: `{}` every {:g} s", t.value("file", ""), t.value("interval_s", 0.0));
    const auto missing = t.value("missing", std::vector<std::string>{});
    if (!missing.empty()) md += fmt::format("; missing sources: {}", fmt::join(missing, "; "));
    md += "\n";
  }
  md += "\n";
  if (!any_case) return;
  std::vector<MarkdownColumn> cols{{"run", false}, {"backend", false}, {"ranks", true}, {"op", false},
                                   {"size", true}, {"CPU °C", true}, {"CPU MHz", true}, {"GPU °C", true},
                                   {"GPU SM MHz", true}, {"GPU W", true}, {"throttled", false}};
  std::vector<std::vector<std::string>> rows;
  for (const auto& c : result.cases) {
    if (c.telemetry.is_null()) continue;
    const auto& t = c.telemetry;
    const bool throttled = t.value("throttled", false);
    rows.push_back({markdown_cell(c.run), markdown_cell(c.backend), std::to_string(c.world_size), markdown_cell(c.op),
                    human_size(c.bytes), range(t, "cpu_temperature_c"), range(t, "cpu_frequency_mhz"),
                    range(t, "gpu_temperature_c"), range(t, "gpu_sm_clock_mhz"), range(t, "gpu_power_w"),
                    throttled ? fmt::format("**yes** ⚠ (GPU reasons 0x{:x}, CPU events {:g})",
                                            t.value("gpu_throttle_reasons", uint64_t{0}),
                                            t.value("cpu_throttle_events", 0.0))
                              : "no"});
  }
  md += "Telemetry per case (ranges over the case's window on agent 0's host):\n\n";
  append_markdown_table(md, cols, rows);
}

}  // namespace commbench
