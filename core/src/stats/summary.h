// Summary statistics of a sample of timings. Percentiles interpolate linearly between closest
// ranks (numpy's default), so the numbers match what users compute from results.csv.
#pragma once

#include <cstddef>
#include <span>

#include <nlohmann/json.hpp>

namespace commbench {

struct SampleSummary {
  size_t n = 0;
  double mean = 0, min = 0, p50 = 0, p95 = 0, p99 = 0, max = 0;
  double stddev = 0;  // sample standard deviation (n-1); 0 when n < 2
  double cv = 0;      // stddev / mean; 0 when mean == 0
};

SampleSummary summarize(std::span<const double> samples);
// q in [0, 1]; samples need not be sorted. Empty input gives 0.
double percentile(std::span<const double> samples, double q);

void to_json(nlohmann::json& j, const SampleSummary& s);
// Same fields in declaration order, for files people read (summary.json, results.jsonl).
void to_json(nlohmann::ordered_json& j, const SampleSummary& s);
void from_json(const nlohmann::json& j, SampleSummary& s);

}  // namespace commbench
