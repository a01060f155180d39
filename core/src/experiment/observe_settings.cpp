#include "experiment/observe_settings.h"

#include <algorithm>
#include <array>
#include <limits>

#include <fmt/format.h>

namespace commbench {
namespace {

constexpr std::array<std::string_view, 3> kProfilerTools{"perf", "nsys", "ncu"};

bool is_tool(std::string_view s) {
  return std::find(kProfilerTools.begin(), kProfilerTools.end(), s) != kProfilerTools.end();
}

std::optional<std::vector<int>> read_ranks(DiagnosticSink& sink, const toml::node& v) {
  const auto* arr = v.as_array();
  if (!arr) {
    report_wrong_type(sink, v, "an array of ranks", "profiler.ranks", " (write ranks = [0, 1])");
    return std::nullopt;
  }
  if (arr->empty()) {  // leaving ranks out profiles every rank; [] would profile none
    sink.error(sink.pos(v), "'profiler.ranks' is empty: leave it out to profile every rank, or name the ranks");
    return std::nullopt;
  }
  std::vector<int> ranks;
  for (const auto& e : *arr) {
    auto r = read_integer(sink, e, "profiler.ranks", 0, std::numeric_limits<int32_t>::max());
    if (!r) return std::nullopt;
    // As batch_sizes and overlap refuse theirs: a repeated rank is a typo for another one.
    if (std::find(ranks.begin(), ranks.end(), static_cast<int>(*r)) != ranks.end()) {
      sink.error(sink.pos(e), fmt::format("rank {} is listed twice in 'profiler.ranks': list each rank once", *r));
      return std::nullopt;
    }
    ranks.push_back(static_cast<int>(*r));
  }
  return ranks;
}

}  // namespace

bool ProfilerSetting::wraps(int rank) const {
  return ranks.empty() || std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
}

void to_json(nlohmann::json& j, const ThermalWarmup& w) {
  j = {{"temperature_c", w.temperature_c}, {"duration_s", w.duration_s}, {"timeout_s", w.timeout_s},
       {"idle_s", w.idle_s}};
}
void from_json(const nlohmann::json& j, ThermalWarmup& w) {
  w.temperature_c = j.value("temperature_c", 0.0);
  w.duration_s = j.value("duration_s", 0.0);
  w.timeout_s = j.value("timeout_s", 600.0);
  w.idle_s = j.value("idle_s", 30.0);
}
void to_json(nlohmann::json& j, const ProfilerSetting& p) {
  j = {{"tool", p.tool}, {"command", p.command}, {"ranks", p.ranks}};
}
void from_json(const nlohmann::json& j, ProfilerSetting& p) {
  p.tool = j.value("tool", "");
  p.command = j.value("command", "");
  p.ranks = j.value("ranks", std::vector<int>{});
}

std::optional<double> read_telemetry(DiagnosticSink& sink, const toml::node& v) {
  if (const auto* b = v.as_boolean()) return b->get() ? kDefaultTelemetryIntervalS : 0.0;
  if (!v.is_string() && !v.is_number()) {
    report_wrong_type(sink, v, "true, false or a sampling interval", "telemetry",
                      " (write telemetry = true, or telemetry = \"250ms\")");
    return std::nullopt;
  }
  auto s = read_duration(sink, v, "telemetry", /*zero_allowed=*/false);
  if (s && *s < 0.01) {
    sink.error(sink.pos(v), fmt::format("'telemetry' interval must be at least 10ms, got {:g} s: "
                                        "shorter intervals make the sampler a load of its own", *s));
    return std::nullopt;
  }
  return s;
}

std::optional<ThermalWarmup> read_thermal_warmup(DiagnosticSink& sink, const toml::node& v) {
  ThermalWarmup w;
  if (!v.is_table()) {
    if (!v.is_string() && !v.is_number()) {
      report_wrong_type(sink, v, "a duration or a table", "thermal_warmup",
                        " (write thermal_warmup = \"2min\" or { temperature_c = 50, timeout = \"10min\" })");
      return std::nullopt;
    }
    auto d = read_duration(sink, v, "thermal_warmup", /*zero_allowed=*/false);
    if (!d) return std::nullopt;
    w.duration_s = *d;
    return w;
  }
  bool ok = true;
  static constexpr std::array<std::string_view, 4> keys{"temperature_c", "duration", "timeout", "idle"};
  for (auto&& [k, value] : *v.as_table()) {
    const std::string key = fmt::format("thermal_warmup.{}", k.str());
    if (k.str() == "temperature_c") {
      const auto t = value.value<double>();
      if (!t || !(*t > 0 && *t < 150)) {
        sink.error(sink.pos(value), fmt::format("'{}' must be a temperature in degrees Celsius between 0 "
                                                "and 150, e.g. 50", key));
        ok = false;
      } else {
        w.temperature_c = *t;
      }
    } else if (k.str() == "duration" || k.str() == "timeout" || k.str() == "idle") {
      auto d = read_duration(sink, value, key, /*zero_allowed=*/k.str() == "idle");
      if (!d) { ok = false; continue; }
      (k.str() == "duration" ? w.duration_s : k.str() == "timeout" ? w.timeout_s : w.idle_s) = *d;
    }
  }
  report_unknown_keys(sink, *v.as_table(), keys, "thermal_warmup");
  if (ok && (w.temperature_c > 0) == (w.duration_s > 0)) {
    sink.error(sink.pos(v), "'thermal_warmup' needs exactly one of temperature_c (warm until the devices "
                            "reach it) or duration (warm for that long)");
    ok = false;
  }
  if (!ok) return std::nullopt;
  return w;
}

std::optional<ProfilerSetting> read_profiler(DiagnosticSink& sink, const toml::node& v) {
  ProfilerSetting p;
  auto from_text = [&](const toml::node& node, std::string_view key) -> bool {
    auto text = read_string(sink, node, key);
    if (!text) return false;
    if (text->empty()) {
      sink.error(sink.pos(node), fmt::format("'{}' is empty: write \"perf\", \"nsys\", \"ncu\" or a "
                                             "command template such as \"strace -f -o {{output}}.strace\"", key));
      return false;
    }
    if (is_tool(*text)) {
      p.tool = *text;
    } else {
      p.tool = "command";
      p.command = *text;
    }
    return true;
  };
  if (!v.is_table()) {
    if (!from_text(v, "profiler")) return std::nullopt;
    return p;
  }
  bool ok = true;
  static constexpr std::array<std::string_view, 3> keys{"tool", "command", "ranks"};
  const auto& t = *v.as_table();
  if (t.contains("tool") == t.contains("command")) {
    sink.error(sink.pos(v), "'profiler' needs exactly one of tool = \"perf\" | \"nsys\" | \"ncu\" or "
                            "command = \"<template>\"");
    ok = false;
  }
  for (auto&& [k, value] : t) {
    if (k.str() == "tool") {
      auto text = read_string(sink, value, "profiler.tool");
      if (text && !is_tool(*text)) {
        sink.error(sink.pos(value), fmt::format("unknown profiler tool '{}'; expected perf, nsys or ncu "
                                                "(or write command = \"...\" for any other wrapper)", *text));
        ok = false;
      } else if (text) {
        p.tool = *text;
      } else {
        ok = false;
      }
    } else if (k.str() == "command") {
      ok &= from_text(value, "profiler.command");
      if (ok) p.tool = "command";
    } else if (k.str() == "ranks") {
      auto r = read_ranks(sink, value);
      if (r) p.ranks = *r; else ok = false;
    }
  }
  report_unknown_keys(sink, t, keys, "profiler");
  if (!ok) return std::nullopt;
  return p;
}

}  // namespace commbench
