#include "measure/rank_aggregation.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

namespace commbench {

SeriesRule series_rule(MeasureMethod method, RankAggregation aggregation, int fixed_rank, int world) {
  using Kind = SeriesRule::Kind;
  if (method == MeasureMethod::PerIteration) return {Kind::SlowestPerIteration, 0, false, "slowest_per_iteration"};
  if (fixed_rank < 0 && aggregation == RankAggregation::Rank0) fixed_rank = 0;
  if (fixed_rank >= 0 && fixed_rank < world) return {Kind::OneRank, fixed_rank, false, fmt::format("rank{}", fixed_rank)};
  if (aggregation == RankAggregation::Min || aggregation == RankAggregation::Max)
    return {Kind::RankByMean, 0, aggregation == RankAggregation::Min, std::string(aggregation_name(aggregation))};
  return {Kind::MeanPerIteration, 0, false, "avg"};
}

int rank_by_mean(const std::vector<double>& m, bool smallest) {
  const auto pick = smallest ? std::min_element(m.begin(), m.end()) : std::max_element(m.begin(), m.end());
  return static_cast<int>(pick - m.begin());
}

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
  const SeriesRule rule = series_rule(method, aggregation, fixed_rank, static_cast<int>(world));
  out.label = rule.label;
  switch (rule.kind) {
    case SeriesRule::Kind::SlowestPerIteration:
      out.samples_us = per_rank[0];  // then the larger of each, as the bootstrap's Max folds them
      for (size_t r = 1; r < world; ++r)
        for (size_t i = 0; i < n; ++i) out.samples_us[i] = std::max(out.samples_us[i], per_rank[r][i]);
      break;
    case SeriesRule::Kind::OneRank:
      out.samples_us = per_rank[static_cast<size_t>(rule.rank)];
      break;
    case SeriesRule::Kind::RankByMean:
      out.samples_us = per_rank[static_cast<size_t>(rank_by_mean(out.rank_mean_us, rule.smallest))];
      break;
    case SeriesRule::Kind::MeanPerIteration:
      out.samples_us.assign(n, 0.0);
      for (size_t r = 0; r < world; ++r)
        for (size_t i = 0; i < n; ++i) out.samples_us[i] += per_rank[r][i];
      for (double& s : out.samples_us) s /= static_cast<double>(world);
      break;
  }
  return out;
}

}  // namespace commbench
