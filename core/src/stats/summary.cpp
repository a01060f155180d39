#include "stats/summary.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace commbench {
namespace {

// numpy.percentile(method="linear") on already sorted data: the value at fractional rank
// (n-1)*q, interpolated between its two neighbours. Matching numpy means a user who recomputes
// p99 from samples_us gets the very same number.
double sorted_percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const double rank = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + frac * (sorted[hi] - sorted[lo]);
}

}  // namespace

double percentile(std::span<const double> samples, double q) {
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  return sorted_percentile(sorted, q);
}

SampleSummary summarize(std::span<const double> samples) {
  SampleSummary s;
  s.n = samples.size();
  if (s.n == 0) return s;

  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  s.min = sorted.front();
  s.max = sorted.back();
  s.p50 = sorted_percentile(sorted, 0.50);
  s.p95 = sorted_percentile(sorted, 0.95);
  s.p99 = sorted_percentile(sorted, 0.99);
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(s.n);

  if (s.n >= 2) {
    // Two-pass variance: the timings are close to each other, so summing squares of the raw
    // values would lose most digits to cancellation.
    double sq = 0;
    for (double x : sorted) sq += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(sq / static_cast<double>(s.n - 1));
  }
  s.cv = s.mean != 0 ? s.stddev / s.mean : 0;
  return s;
}

namespace {
template <class Json>
void write_summary(Json& j, const SampleSummary& s) {
  j = Json::object();
  j["n"] = s.n;
  j["mean"] = s.mean;
  j["min"] = s.min;
  j["p50"] = s.p50;
  j["p95"] = s.p95;
  j["p99"] = s.p99;
  j["max"] = s.max;
  j["stddev"] = s.stddev;
  j["cv"] = s.cv;
}

// Missing or null fields read as 0, so files from older writers (or NaN written as null)
// still load.
double number_or_zero(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->template get<double>() : 0.0;
}
}  // namespace

void to_json(nlohmann::json& j, const SampleSummary& s) { write_summary(j, s); }
void to_json(nlohmann::ordered_json& j, const SampleSummary& s) { write_summary(j, s); }

void from_json(const nlohmann::json& j, SampleSummary& s) {
  s = SampleSummary{};
  s.n = static_cast<size_t>(number_or_zero(j, "n"));
  s.mean = number_or_zero(j, "mean");
  s.min = number_or_zero(j, "min");
  s.p50 = number_or_zero(j, "p50");
  s.p95 = number_or_zero(j, "p95");
  s.p99 = number_or_zero(j, "p99");
  s.max = number_or_zero(j, "max");
  s.stddev = number_or_zero(j, "stddev");
  s.cv = number_or_zero(j, "cv");
}

}  // namespace commbench
