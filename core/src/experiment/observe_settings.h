// The run settings that look inside a run without changing what it measures (docs/observability.md):
//   telemetry      = true | false | "<interval>"        the agent's sampler (agent/telemetry_*)
//   thermal_warmup = "<duration>" | { temperature_c = 50, timeout = "10min", idle = "30s" }
//   profiler       = "perf" | "nsys" | "ncu" | "<command template>"
//                    | { tool = "perf", ranks = [0] } | { command = "...", ranks = [...] }
// Kept together and small so that they move into the run-settings table as one piece.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "experiment/toml_fields.h"

namespace commbench {

inline constexpr double kDefaultTelemetryIntervalS = 1.0;

struct ThermalWarmup {
  double temperature_c = 0;  // > 0: load until every device reaches it (or timeout_s passes)
  double duration_s = 0;     // temperature_c == 0: load for this long
  double timeout_s = 600;    // longest warm-up with a temperature target
  double idle_s = 30;        // a gap between executions longer than this needs a new warm-up
};

struct ProfilerSetting {
  std::string tool;              // "perf", "nsys", "ncu", or "command" for a template
  std::string command;           // the template (tool == "command")
  std::vector<int> ranks;        // ranks whose workers are wrapped; empty: all
  bool wraps(int rank) const;
};

void to_json(nlohmann::json& j, const ThermalWarmup& w);
void from_json(const nlohmann::json& j, ThermalWarmup& w);
void to_json(nlohmann::json& j, const ProfilerSetting& p);
void from_json(const nlohmann::json& j, ProfilerSetting& p);

// Readers for the three keys; errors go to `sink` at the value's position, and nullopt is returned.
std::optional<double> read_telemetry(DiagnosticSink& sink, const toml::node& v);  // seconds, 0 = off
std::optional<ThermalWarmup> read_thermal_warmup(DiagnosticSink& sink, const toml::node& v);
std::optional<ProfilerSetting> read_profiler(DiagnosticSink& sink, const toml::node& v);

}  // namespace commbench
