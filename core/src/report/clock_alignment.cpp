#include "report/clock_alignment.h"

#include <algorithm>
#include <cmath>

namespace commbench {

nlohmann::json clock_record(int rounds, const std::vector<ClockEstimate>& start,
                            const std::vector<ClockEstimate>& end) {
  nlohmann::json ranks = nlohmann::json::array();
  for (size_t r = 0; r < start.size(); ++r) {
    const ClockEstimate& s = start[r];
    nlohmann::json j{{"rank", s.rank}, {"host", s.host}, {"start", s}};
    j["start"].erase("rank");
    j["start"].erase("host");
    int64_t rtt = s.rtt_ns;
    if (r < end.size()) {
      const ClockEstimate& e = end[r];
      j["end"] = e;
      j["end"].erase("rank");
      j["end"].erase("host");
      const double span = static_cast<double>(e.at_ns - s.at_ns);
      j["drift_ppm"] = span > 0 ? static_cast<double>(e.offset_ns - s.offset_ns) / span * 1e6 : 0.0;
      rtt = std::max(rtt, e.rtt_ns);
    }
    j["error_bound_ns"] = rtt / 2;  // each estimate is within half its round trip
    ranks.push_back(std::move(j));
  }
  return {{"timeline", "rank 0's timer, ns (CLOCK_MONOTONIC of rank 0's host)"},
          {"method", "round trips through the bootstrap store by each host's lowest rank, the shortest kept; "
                     "the host's other ranks add their timer's offset to the host clock"},
          {"rounds", rounds},
          {"ranks", std::move(ranks)}};
}

ClockAlignment::ClockAlignment(const nlohmann::json& record) {
  if (!record.is_object() || !record.contains("ranks") || !record["ranks"].is_array()) return;
  for (const auto& j : record["ranks"]) {
    const int r = j.value("rank", -1);
    if (r < 0 || !j.contains("start")) continue;
    if (ranks_.size() <= static_cast<size_t>(r)) ranks_.resize(static_cast<size_t>(r) + 1);
    Rank& k = ranks_[static_cast<size_t>(r)];
    const ClockEstimate s = j["start"].get<ClockEstimate>();
    k.known = true;
    k.host = j.value("host", "");
    k.offset_ns = s.offset_ns;
    k.at_ns = s.at_ns;
    k.unix_minus_timer_ns = s.unix_minus_timer_ns;
    if (j.contains("end")) {
      const ClockEstimate e = j["end"].get<ClockEstimate>();
      if (e.at_ns > s.at_ns) k.drift = static_cast<double>(e.offset_ns - s.offset_ns) / static_cast<double>(e.at_ns - s.at_ns);
    }
  }
}

int64_t ClockAlignment::to_rank0(int rank, int64_t local_ns) const {
  if (!known(rank)) return local_ns;
  const Rank& k = ranks_[static_cast<size_t>(rank)];
  return local_ns + k.offset_ns + std::llround(k.drift * static_cast<double>(local_ns - k.at_ns));
}

std::optional<int64_t> ClockAlignment::unix_to_rank0(const std::string& host, int64_t unix_ns) const {
  for (size_t r = 0; r < ranks_.size(); ++r)
    if (ranks_[r].known && ranks_[r].host == host)
      return to_rank0(static_cast<int>(r), unix_ns - ranks_[r].unix_minus_timer_ns);
  return std::nullopt;
}

}  // namespace commbench
