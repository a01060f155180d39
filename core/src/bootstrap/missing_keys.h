// How a timeout names who never arrived, from the keys it waited for in vain (each ending in
// "/<number>"): "rank 2 has", "hosts 3, 5 and 4 more have". Shared by the rank collectives and the
// host tree so both say it the same way.
#pragma once

#include <string>
#include <vector>

#include <fmt/format.h>

namespace commbench {

inline std::string describe_missing(const std::vector<std::string>& keys, const char* noun) {
  constexpr size_t kMaxNamed = 8;
  std::string numbers;
  for (size_t i = 0; i < keys.size() && i < kMaxNamed; ++i) {
    numbers += (i == 0 ? "" : ", ") + keys[i].substr(keys[i].rfind('/') + 1);
  }
  if (keys.size() > kMaxNamed) numbers += fmt::format(" and {} more", keys.size() - kMaxNamed);
  return fmt::format("{}{} {} {}", noun, keys.size() == 1 ? "" : "s", numbers, keys.size() == 1 ? "has" : "have");
}

// The question after describe_missing: "is it alive?" / "are they alive?".
inline const char* alive_question(size_t missing) { return missing == 1 ? "is it alive?" : "are they alive?"; }

}  // namespace commbench
