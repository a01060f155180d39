#include "experiment/durations.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "experiment/did_you_mean.h"

namespace commbench {
namespace {

struct TimeUnit {
  std::string_view name;
  double seconds;
};
constexpr std::array<TimeUnit, 6> kTimeUnits{{
    {"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}, {"min", 60.0}, {"h", 3600.0},
}};
constexpr std::array<std::string_view, 6> kTimeUnitNames{"ns", "us", "ms", "s", "min", "h"};
constexpr std::string_view kDurationHelp =
    "write a number of seconds or a number with a unit ns, us, ms, s, min, h, e.g. \"500ms\"";

}  // namespace

Parsed<double> parse_duration(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  const size_t number_start = i;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  double number = 0;
  const std::string_view number_text = text.substr(number_start, i - number_start);
  auto [end, ec] = std::from_chars(number_text.data(), number_text.data() + number_text.size(), number);
  if (number_text.empty() || ec != std::errc() || end != number_text.data() + number_text.size()) {
    if (number_start < text.size() && text[number_start] == '-')
      return Parsed<double>::fail(fmt::format("duration '{}' is negative", text));
    return Parsed<double>::fail(fmt::format("cannot read duration '{}': {}", text, kDurationHelp));
  }
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  std::string_view unit = text.substr(i);
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.back()))) unit.remove_suffix(1);
  if (unit.empty())
    return Parsed<double>::fail(fmt::format(
        "duration '{}' has no unit: write \"{}s\", or a number of seconds without quotes", text,
        number_text));
  for (const auto& u : kTimeUnits) {
    if (u.name != unit) continue;
    const double seconds = number * u.seconds;
    if (!std::isfinite(seconds))
      return Parsed<double>::fail(fmt::format("duration '{}' is too large", text));
    return Parsed<double>::ok(seconds);
  }
  std::string hint = unit == "m" ? "; did you mean 'min' or 'ms'?" : did_you_mean(unit, kTimeUnitNames);
  return Parsed<double>::fail(
      fmt::format("unknown unit '{}' in duration '{}'{} ({})", unit, text, hint, kDurationHelp));
}

}  // namespace commbench
