// Message sizes as users write them: "4KiB", "1.5 MiB", "1MB", "1M elements", 4096.
//
// Units (case-sensitive):
//   bytes, binary:   B, KiB = 2^10, MiB = 2^20, GiB = 2^30, TiB = 2^40
//   bytes, decimal:  KB (also kB) = 10^3, MB = 10^6, GB = 10^9, TB = 10^12
//   element counts:  "<n> elements" (also element, elems, elem) with an optional multiplier
//                    K/Ki = 2^10, M/Mi = 2^20, G/Gi = 2^30, T/Ti = 2^40 — both spellings binary,
//                    because "1M elements" conventionally means 1,048,576 (as seed 000 uses it).
// A decimal number is accepted when the result is whole ("1.5KiB" = 1536 B; "0.3B" is rejected).
// Every size is > 0 and at most 2^63-1 bytes or elements.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "experiment/experiment.h"
#include "experiment/parsed.h"

namespace commbench {

inline constexpr uint64_t kMaxSize = static_cast<uint64_t>(INT64_MAX);

// A size written as text. The error says what to write instead.
Parsed<SizeSpec> parse_size(std::string_view text);

// A size written as a TOML integer: bytes.
Parsed<SizeSpec> size_from_integer(int64_t bytes);

// Short canonical text for a size computed rather than written (range expansion):
// "4KiB", "3MB", "1000B", "1M elements", "12 elements".
std::string format_size(uint64_t value, bool elements);

// min, min*factor, min*factor^2, ... up to and including max (max only if reached exactly).
// min and max must both be bytes or both element counts; factor >= 2.
Parsed<std::vector<SizeSpec>> expand_size_range(const SizeSpec& min, const SizeSpec& max,
                                                int64_t factor);

}  // namespace commbench
