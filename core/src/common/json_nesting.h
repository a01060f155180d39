// Bounded reading of JSON that commbench did not necessarily write itself (a rank's trace file, a
// results.jsonl edited or damaged on disk): nesting is measured by a linear scan before any
// parser sees the text, so hostile input (a million '[') is refused instead of exhausting the
// stack, and one complete value can be cut from a stream whose end may be missing.
#pragma once

#include <cstddef>
#include <string_view>

namespace commbench {

// Deeper than anything commbench writes (trace events and records nest a few levels).
inline constexpr int kMaxJsonNesting = 64;

struct JsonExtent {
  enum class End { Complete, Truncated, TooDeep } end = End::Complete;
  size_t length = 0;  // Complete: bytes of the value; otherwise where the scan stopped
};

// The extent of the JSON value starting at text[0] (an object, array, string or scalar), by
// brackets and strings alone; the value itself is not validated.
JsonExtent json_value_extent(std::string_view text, int max_nesting = kMaxJsonNesting);

}  // namespace commbench
