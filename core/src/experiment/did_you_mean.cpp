#include "experiment/did_you_mean.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace commbench {
namespace {
std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
}  // namespace

size_t edit_distance(std::string_view a, std::string_view b) {
  const size_t n = a.size(), m = b.size();
  // d[i][j]: distance between the first i characters of a and the first j of b.
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

std::optional<std::string_view> closest_match(std::string_view word,
                                              std::span<const std::string_view> candidates) {
  const std::string w = lowercase(word);
  const size_t max_distance = w.size() <= 3 ? 1 : 2;
  std::optional<std::string_view> best;
  size_t best_distance = max_distance + 1;
  for (std::string_view c : candidates) {
    const size_t dist = edit_distance(w, lowercase(c));
    if (dist < best_distance) {
      best = c;
      best_distance = dist;
    }
  }
  if (best) return best;
  if (w.size() >= 3) {
    for (std::string_view c : candidates)
      if (lowercase(c).starts_with(w)) return c;
  }
  return std::nullopt;
}

std::string did_you_mean(std::string_view word, std::span<const std::string_view> candidates) {
  if (auto m = closest_match(word, candidates)) return fmt::format("; did you mean '{}'?", *m);
  return {};
}

std::string unknown_value(std::string_view what, std::string_view value,
                          std::span<const std::string_view> valid) {
  std::string hint = did_you_mean(value, valid);
  if (hint.empty()) hint = fmt::format("; expected one of: {}", fmt::join(valid, ", "));
  return fmt::format("unknown {} '{}'{}", what, value, hint);
}

}  // namespace commbench
