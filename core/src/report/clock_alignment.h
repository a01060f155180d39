// Rank 0's timeline for a whole execution, from the clock estimates its workers made at the
// start and at the end (measure/clock_sync.h). The execution record keeps them as "clock":
//   { "timeline", "rounds", "ranks": [ { rank, host, start{...}, end{...}, drift_ppm, error_bound_ns } ] }
// and execution_log.csv and the merged trace map each rank's timestamps through it:
//   t0 = t + offset_start + drift * (t - at_start)     (drift = 0 without an end estimate)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "measure/clock_sync.h"

namespace commbench {

// The execution record's "clock" object; `end` may be empty (the execution failed before it).
nlohmann::json clock_record(int rounds, const std::vector<ClockEstimate>& start,
                            const std::vector<ClockEstimate>& end);

class ClockAlignment {
 public:
  ClockAlignment() = default;  // nothing known: timestamps stay as they are
  explicit ClockAlignment(const nlohmann::json& record);

  bool known(int rank) const { return rank >= 0 && static_cast<size_t>(rank) < ranks_.size() && ranks_[rank].known; }
  // A timestamp of `rank`'s timer on rank 0's; unchanged when the rank's clock is not known.
  int64_t to_rank0(int rank, int64_t local_ns) const;
  // A wall-clock (CLOCK_REALTIME) time read on `host` on rank 0's timeline, through the first
  // rank on that host; nullopt when no rank ran there.
  std::optional<int64_t> unix_to_rank0(const std::string& host, int64_t unix_ns) const;

 private:
  struct Rank {
    bool known = false;
    std::string host;
    int64_t offset_ns = 0, at_ns = 0, unix_minus_timer_ns = 0;
    double drift = 0;  // d(offset)/d(local time)
  };
  std::vector<Rank> ranks_;
};

}  // namespace commbench
