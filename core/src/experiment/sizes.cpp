#include "experiment/sizes.h"

#include <array>
#include <cctype>
#include <optional>

#include <fmt/format.h>

#include "experiment/did_you_mean.h"

namespace commbench {
namespace {

struct Unit {
  std::string_view name;
  uint64_t multiplier;
};

constexpr uint64_t kKi = 1ull << 10, kMi = 1ull << 20, kGi = 1ull << 30, kTi = 1ull << 40;

constexpr std::array<Unit, 10> kByteUnits{{
    {"B", 1}, {"KiB", kKi}, {"MiB", kMi}, {"GiB", kGi}, {"TiB", kTi},
    {"KB", 1000}, {"kB", 1000}, {"MB", 1000'000}, {"GB", 1000'000'000}, {"TB", 1000'000'000'000},
}};
// Element multipliers: both spellings are binary (see sizes.h).
constexpr std::array<Unit, 8> kElementMultipliers{{
    {"K", kKi}, {"M", kMi}, {"G", kGi}, {"T", kTi}, {"Ki", kKi}, {"Mi", kMi}, {"Gi", kGi}, {"Ti", kTi},
}};
constexpr std::array<std::string_view, 4> kElementWords{"elements", "element", "elems", "elem"};
constexpr std::array<std::string_view, 9> kByteUnitNames{"B",  "KiB", "MiB", "GiB", "TiB",
                                                         "KB", "MB",  "GB",  "TB"};
constexpr std::string_view kUnitHelp =
    "byte units are B, KiB, MiB, GiB, TiB (binary) and KB, MB, GB, TB (decimal); "
    "element counts are written like \"1M elements\"";

template <size_t N>
std::optional<uint64_t> find_unit(const std::array<Unit, N>& units, std::string_view name) {
  for (const auto& u : units)
    if (u.name == name) return u.multiplier;
  return std::nullopt;
}

bool is_element_word(std::string_view w) {
  for (auto e : kElementWords)
    if (e == w) return true;
  return false;
}

std::vector<std::string_view> split_words(std::string_view s) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    size_t start = i;
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i > start) words.push_back(s.substr(start, i - start));
  }
  return words;
}

// A non-negative decimal number "123" or "1.25": integer part and fraction digits.
struct Decimal {
  unsigned __int128 integer = 0;  // saturates at kIntegerCap: larger is "too large" anyway
  std::string_view fraction;      // digits after '.', trailing zeros removed
};
constexpr unsigned __int128 kIntegerCap = static_cast<unsigned __int128>(kMaxSize) + 1;

// Parses the leading number of `text`; `rest` gets what follows. Empty on malformed numbers.
std::optional<Decimal> parse_decimal(std::string_view text, std::string_view& rest) {
  Decimal d;
  size_t i = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    d.integer = d.integer * 10 + static_cast<unsigned>(text[i] - '0');
    if (d.integer > kIntegerCap) d.integer = kIntegerCap;
  }
  if (i == 0) return std::nullopt;
  if (i < text.size() && text[i] == '.') {
    const size_t start = ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == start) return std::nullopt;  // "1." is not a number
    d.fraction = text.substr(start, i - start);
    while (!d.fraction.empty() && d.fraction.back() == '0') d.fraction.remove_suffix(1);
  }
  rest = text.substr(i);
  return d;
}

// number * multiplier when it is a whole number; `whole` tells which way it failed otherwise.
std::optional<unsigned __int128> scale(const Decimal& d, uint64_t multiplier, bool& whole) {
  whole = true;
  // A multiplier is at most 10^12 or 2^40, so more than 18 significant fraction digits can never
  // give a whole number, and 18 digits times the multiplier fits in 128 bits.
  if (d.fraction.size() > 18) {
    whole = false;
    return std::nullopt;
  }
  unsigned __int128 frac = 0, denominator = 1;
  for (char c : d.fraction) {
    frac = frac * 10 + static_cast<unsigned>(c - '0');
    denominator *= 10;
  }
  if ((frac * multiplier) % denominator != 0) {
    whole = false;
    return std::nullopt;
  }
  return d.integer * multiplier + frac * multiplier / denominator;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string unknown_unit_message(std::string_view text, std::string_view number,
                                 std::string_view unit) {
  std::string hint;
  if (find_unit(kElementMultipliers, unit)) {
    // "1M": bytes or elements? Ask rather than guess.
    const std::string binary = unit.size() == 1 ? fmt::format("{}i", unit) : std::string(unit);
    hint = fmt::format("; did you mean '{}{}B' (bytes) or '{}{} elements'?", number, binary,
                       number, unit);
  } else if (unit == "byte" || unit == "bytes") {
    hint = fmt::format("; did you mean '{}B'?", number);
  } else {
    hint = did_you_mean(unit, kByteUnitNames);
  }
  return fmt::format("unknown unit '{}' in size '{}'{} ({})", unit, text, hint, kUnitHelp);
}

}  // namespace

Parsed<SizeSpec> parse_size(std::string_view text) {
  const std::string_view t = trim(text);
  if (t.empty()) return Parsed<SizeSpec>::fail(fmt::format("empty size: write e.g. \"4KiB\" or \"1M elements\""));
  if (t.front() == '-')
    return Parsed<SizeSpec>::fail(fmt::format("size '{}' is negative: sizes must be greater than 0", text));
  std::string_view rest;
  auto number = parse_decimal(t, rest);
  if (!number) {
    const size_t digits = t.find_first_not_of("0123456789");
    if (digits != 0 && digits != std::string_view::npos && t[digits] == '.')  // "1.KiB", "2."
      return Parsed<SizeSpec>::fail(fmt::format(
          "size '{}': a digit must follow the decimal point: write e.g. \"{}KiB\" or \"{}.5KiB\"", text,
          t.substr(0, digits), t.substr(0, digits)));
    return Parsed<SizeSpec>::fail(fmt::format(
        "size '{}' does not start with a number: write e.g. \"4KiB\" or \"1M elements\"", text));
  }

  const auto words = split_words(rest);
  uint64_t multiplier = 1;
  bool elements = false;
  if (words.empty()) {
    return Parsed<SizeSpec>::fail(fmt::format(
        "size '{}' has no unit: write \"{}B\" for bytes or \"{} elements\", or an integer "
        "(bytes) without quotes",
        text, t, t));
  } else if (words.size() == 1 && is_element_word(words[0])) {
    elements = true;
  } else if (words.size() == 1) {
    auto m = find_unit(kByteUnits, words[0]);
    if (!m) return Parsed<SizeSpec>::fail(
          unknown_unit_message(text, t.substr(0, t.size() - rest.size()), words[0]));
    multiplier = *m;
  } else if (words.size() == 2 && is_element_word(words[1])) {
    auto m = find_unit(kElementMultipliers, words[0]);
    if (!m)
      return Parsed<SizeSpec>::fail(fmt::format(
          "unknown multiplier '{}' in size '{}': element counts take K, M, G, T (or Ki, Mi, Gi, "
          "Ti; all binary), e.g. \"16M elements\"",
          words[0], text));
    multiplier = *m;
    elements = true;
  } else {
    return Parsed<SizeSpec>::fail(fmt::format("cannot read size '{}' ({})", text, kUnitHelp));
  }

  const char* what = elements ? "elements" : "bytes";
  bool whole = true;
  const auto scaled = scale(*number, multiplier, whole);
  if (!whole)
    return Parsed<SizeSpec>::fail(fmt::format("size '{}' is not a whole number of {}", text, what));
  if (*scaled > kMaxSize)
    return Parsed<SizeSpec>::fail(
        fmt::format("size '{}' is too large: the limit is 2^63-1 {}", text, what));
  const auto value = static_cast<uint64_t>(*scaled);
  if (value == 0)
    return Parsed<SizeSpec>::fail(fmt::format("size '{}' is zero: sizes must be greater than 0", text));
  return Parsed<SizeSpec>::ok(SizeSpec{value, elements, std::string(t)});
}

Parsed<SizeSpec> size_from_integer(int64_t bytes) {
  if (bytes <= 0)
    return Parsed<SizeSpec>::fail(
        fmt::format("size {} is not positive: sizes must be greater than 0", bytes));
  return Parsed<SizeSpec>::ok(
      SizeSpec{static_cast<uint64_t>(bytes), false, std::to_string(bytes)});
}

std::string format_size(uint64_t value, bool elements) {
  if (elements) {
    for (auto it = kElementMultipliers.rbegin() + 4; it != kElementMultipliers.rend(); ++it)
      if (value % it->multiplier == 0) return fmt::format("{}{} elements", value / it->multiplier, it->name);
    return fmt::format("{} elements", value);
  }
  // Prefer the binary unit that divides exactly, then the decimal one, then plain bytes.
  for (std::string_view name : {"TiB", "GiB", "MiB", "KiB", "TB", "GB", "MB", "KB"}) {
    const uint64_t m = *find_unit(kByteUnits, name);
    if (value % m == 0) return fmt::format("{}{}", value / m, name);
  }
  return fmt::format("{}B", value);
}

Parsed<std::vector<SizeSpec>> expand_size_range(const SizeSpec& min, const SizeSpec& max,
                                                int64_t factor) {
  using Result = Parsed<std::vector<SizeSpec>>;
  if (min.elements != max.elements)
    return Result::fail(fmt::format("'min' ({}) and 'max' ({}) must both be bytes or both element counts",
                                    min.text, max.text));
  if (min.value > max.value)
    return Result::fail(fmt::format("'min' ({}) is larger than 'max' ({})", min.text, max.text));
  if (factor < 2) return Result::fail(fmt::format("'factor' must be at least 2, got {}", factor));
  std::vector<SizeSpec> sizes;
  const auto f = static_cast<uint64_t>(factor);
  for (uint64_t v = min.value;; v *= f) {
    sizes.push_back(SizeSpec{v, min.elements, format_size(v, min.elements)});
    if (v > max.value / f) break;  // the next one would pass max (or overflow)
  }
  return Result::ok(std::move(sizes));
}

}  // namespace commbench
