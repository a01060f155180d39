#include "report/scaling.h"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

#include "common/ops.h"
#include "report/format.h"
#include "report/repeat_choice.h"

namespace commbench {
namespace {

using ScalingKey = std::tuple<int, std::string, std::string, std::string, std::string, std::string,
                       std::string, uint64_t>;

// The series `key` names, made from `r`'s identity the first time it is seen.
ScalingSeries& series_for(const ScalingKey& key, const CaseRecord& r, ScalingMode mode, uint64_t bytes,
                          std::map<ScalingKey, size_t>& index, std::vector<ScalingSeries>& all) {
  auto [it, added] = index.emplace(key, all.size());
  if (added) {
    ScalingSeries s;
    s.run_index = r.run_index;
    s.run = r.run;
    s.backend = r.backend;
    s.op = r.op;
    s.dtype = r.dtype;
    s.redop = r.redop;
    s.placement = r.placement;
    s.memory = r.memory;
    s.mode = mode;
    s.bytes = bytes;
    all.push_back(std::move(s));
  }
  return all[it->second];
}

// A workload record: series per (run, backend, model, sharding, overlap, dtype, memory, batch) —
// the batch per rank (weak) or the global batch (strong: per rank it shrinks as N grows).
void add_workload_point(const CaseRecord& r, ScalingMode mode, std::map<ScalingKey, size_t>& index,
                        std::vector<ScalingSeries>& all) {
  const nlohmann::json& w = r.workload;
  const double samples = w.value("samples_per_s", 0.0);
  if (r.status != "ok" || !(samples > 0) || r.world_size < 1) return;
  const std::string what = fmt::format("{} {} overlap {}", w.value("model", std::string("?")),
                                       w.value("sharding", std::string("?")), w.value("overlap", false) ? "on" : "off");
  const int batch = mode == ScalingMode::Strong ? w.value("batch_size", 0) * r.world_size : w.value("batch_size", 0);
  const ScalingKey key{r.run_index, r.backend, r.op + " " + what, r.dtype, "", "", r.memory, static_cast<uint64_t>(batch)};
  ScalingSeries& s = series_for(key, r, mode, r.bytes, index, all);
  s.redop.clear();  // a step's collectives are not one reduction
  s.placement.clear();
  s.workload = what;
  s.batch_size = batch;
  // The step time samples/s comes from (its p50, docs/workloads.md), so that the efficiency shown
  // beside it can be recomputed from it; the record's mean would disagree by the steps' spread.
  const nlohmann::json& step = w.contains("step_ms") ? w["step_ms"] : nlohmann::json::object();
  const double step_us = step.is_object() ? step.value("p50", 0.0) * 1e3 : 0.0;
  if (std::none_of(s.points.begin(), s.points.end(), [&](const ScalingPoint& p) { return p.world_size == r.world_size; }))
    s.points.push_back(ScalingPoint{r.world_size, step_us > 0 ? step_us : r.time_us.mean, 0, samples, 0});
}

}  // namespace

std::vector<ScalingSeries> scaling_series(const std::vector<CaseRecord>& records,
                                          const std::map<int, ScalingMode>& modes) {
  std::map<ScalingKey, size_t> index;
  std::vector<ScalingSeries> all;
  // With `repeats`, each case's median repeat, as the comparison tables show (repeat_choice.h).
  for (const CaseRecord* one : one_per_case(records)) {
    const CaseRecord& r = *one;
    if (r.workload.is_object()) {
      const auto m = modes.find(r.run_index);
      add_workload_point(r, m == modes.end() ? ScalingMode::Weak : m->second, index, all);
      continue;
    }
    const auto kind = parse_op_kind(r.op);
    if (!kind || *kind == OpKind::Barrier || *kind == OpKind::AllPairs || between_two_peers(*kind)) continue;
    // One rank communicates with no one (NCCL copies, or in place does nothing: 0.2 µs for any
    // size): as a base it made every other world size's efficiency a fraction of a percent.
    if (r.status != "ok" || !(r.time_us.mean > 0) || r.world_size < 2) continue;
    const auto m = modes.find(r.run_index);
    const ScalingMode mode = m == modes.end() ? ScalingMode::Weak : m->second;
    // Strong: the series is the job-wide size, which the per-rank size came from (plan.cpp).
    const uint64_t bytes = mode == ScalingMode::Strong ? r.bytes * strong_scaling_share(*kind, r.world_size) : r.bytes;
    const ScalingKey key{r.run_index, r.backend, r.op, r.dtype, r.redop, r.placement, r.memory, bytes};
    ScalingSeries& s = series_for(key, r, mode, bytes, index, all);
    const double n = r.world_size;
    // Weak: every rank's message, except msg_rate, whose ⌊n/2⌋ pairs each move one (its algbw:
    // an odd rank out does no work, and the efficiency says so).
    const double movers = op_info(*kind).algbw == PerWorld::Pairs ? per_world(PerWorld::Pairs, r.world_size) : n;
    const double work = mode == ScalingMode::Strong ? static_cast<double>(bytes) : movers * static_cast<double>(r.bytes);
    // A world size seen twice in one series (cases that differ in what the series does not key
    // on, such as the timing method) keeps the first.
    if (std::none_of(s.points.begin(), s.points.end(), [&](const ScalingPoint& p) { return p.world_size == r.world_size; }))
      s.points.push_back(ScalingPoint{r.world_size, r.time_us.mean, work / r.time_us.mean / 1e3, 0});
  }
  std::map<int, int> repeats;  // run index -> the most repeats any of its cases had
  for (const CaseRecord& r : records) repeats[r.run_index] = std::max(repeats[r.run_index], r.repeat + 1);
  std::vector<ScalingSeries> out;
  for (ScalingSeries& s : all) {
    if (s.points.size() < 2) continue;
    s.repeats = repeats[s.run_index];
    std::sort(s.points.begin(), s.points.end(),
              [](const ScalingPoint& a, const ScalingPoint& b) { return a.world_size < b.world_size; });
    const ScalingPoint base = s.points.front();
    s.base_world_size = base.world_size;
    for (ScalingPoint& p : s.points) {
      const double gain = s.workload.empty() ? p.throughput_gbps / base.throughput_gbps : p.samples_per_s / base.samples_per_s;
      p.efficiency = gain / (static_cast<double>(p.world_size) / base.world_size);
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::map<int, ScalingMode> scaling_modes(const nlohmann::json& experiment_json) {
  std::map<int, ScalingMode> modes;
  if (!experiment_json.is_object() || !experiment_json.contains("runs")) return modes;
  for (const auto& run : experiment_json.at("runs"))
    if (run.is_object() && run.value("scaling", "") == scaling_name(ScalingMode::Strong))
      modes[run.value("index", 0)] = ScalingMode::Strong;
  return modes;
}

std::string describe_scaling(const ScalingSeries& s) {
  if (!s.workload.empty())
    return fmt::format("{}: {} scaling of batch {} {}, throughput samples/s, efficiency against {} rank{}", s.workload,
                       scaling_name(s.mode), s.batch_size, s.mode == ScalingMode::Strong ? "in total" : "per rank",
                       s.base_world_size, s.base_world_size == 1 ? "" : "s");
  return fmt::format("{} scaling of {} {}, efficiency against {} rank{}", scaling_name(s.mode), human_size(s.bytes),
                     s.mode == ScalingMode::Strong ? "in total" : "per rank", s.base_world_size,
                     s.base_world_size == 1 ? "" : "s");
}

}  // namespace commbench
