// Durations as users write them: "500ms", "1.5s", "2 min", or a plain number of seconds.
// Units: ns, us, ms, s, min, h. ("m" is rejected: minutes or milliseconds?)
#pragma once

#include <string_view>

#include "experiment/parsed.h"

namespace commbench {

// The longest duration any key accepts (timeout, min_time): 7 days. A longer one is a typo, and
// beyond ~292 years a count of nanoseconds in int64 (std::chrono) overflows.
inline constexpr double kMaxDurationS = 7 * 24 * 3600.0;

// Seconds, >= 0. The error says what to write instead.
Parsed<double> parse_duration(std::string_view text);

}  // namespace commbench
