#include "common/console_text.h"

#include <fmt/format.h>

namespace commbench {
namespace {

bool unprintable(char32_t c) {
  return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x2028 || c == 0x2029 || c == 0x061c || c == 0x200e ||
         c == 0x200f || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

// Decodes the code point at `i` and advances `i`; an invalid sequence yields its first byte.
char32_t next_code_point(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  const size_t len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xe ? 3 : (b0 >> 3) == 0x1e ? 4 : 0;
  if (len <= 1 || i + len > s.size()) {
    ++i;
    return b0;
  }
  char32_t c = b0 & (0x7f >> len);
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xc0) != 0x80) {
      ++i;
      return b0;
    }
    c = (c << 6) | (b & 0x3f);
  }
  i += len;
  return c;
}

}  // namespace

std::optional<char32_t> first_unprintable(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t at = i;
    const char32_t c = next_code_point(text, i);
    // A lone byte >= 0x80 is not valid UTF-8: never printable as it is.
    if (unprintable(c) || (i - at == 1 && c >= 0x80)) return c;
  }
  return std::nullopt;
}

std::string console_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t at = i;
    const char32_t c = next_code_point(text, i);
    const bool invalid = i - at == 1 && c >= 0x80;
    if (!unprintable(c) && !invalid) {
      out.append(text.substr(at, i - at));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x100) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(c));
    } else {
      out += fmt::format("\\u{{{:04x}}}", static_cast<unsigned>(c));
    }
  }
  return out;
}

std::string describe_code_point(char32_t c) {
  return c < 0x80 ? fmt::format("0x{:02x}", static_cast<unsigned>(c)) : fmt::format("U+{:04X}", static_cast<unsigned>(c));
}

}  // namespace commbench
