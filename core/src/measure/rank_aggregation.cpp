#include "measure/rank_aggregation.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

namespace commbench {

AggregatedTimes aggregate_ranks(const std::vector<std::vector<double>>& per_rank,
                                MeasureMethod method, RankAggregation aggregation, int fixed_rank) {
  AggregatedTimes out;
  const size_t world = per_rank.size();
  const size_t n = world > 0 ? per_rank[0].size() : 0;
  out.rank_mean_us.assign(world, 0.0);
  for (size_t r = 0; r < world; ++r)
    if (n > 0)
      out.rank_mean_us[r] = std::accumulate(per_rank[r].begin(), per_rank[r].end(), 0.0) / static_cast<double>(n);
  if (world == 0) return out;

  if (method == MeasureMethod::PerIteration) {
    out.label = "slowest_per_iteration";
    out.samples_us.assign(n, 0.0);
    for (size_t r = 0; r < world; ++r)
      for (size_t i = 0; i < n; ++i) out.samples_us[i] = std::max(out.samples_us[i], per_rank[r][i]);
    return out;
  }
  if (fixed_rank < 0 && aggregation == RankAggregation::Rank0) fixed_rank = 0;
  if (fixed_rank >= 0 && static_cast<size_t>(fixed_rank) < world) {
    out.label = fmt::format("rank{}", fixed_rank);
    out.samples_us = per_rank[static_cast<size_t>(fixed_rank)];
    return out;
  }
  if (aggregation == RankAggregation::Min || aggregation == RankAggregation::Max) {
    const auto& m = out.rank_mean_us;
    const auto pick = aggregation == RankAggregation::Min ? std::min_element(m.begin(), m.end())
                                                          : std::max_element(m.begin(), m.end());
    out.label = std::string(aggregation_name(aggregation));
    out.samples_us = per_rank[static_cast<size_t>(pick - m.begin())];
    return out;
  }
  out.label = "avg";
  out.samples_us.assign(n, 0.0);
  for (size_t r = 0; r < world; ++r)
    for (size_t i = 0; i < n; ++i) out.samples_us[i] += per_rank[r][i];
  for (double& s : out.samples_us) s /= static_cast<double>(world);
  return out;
}

}  // namespace commbench
