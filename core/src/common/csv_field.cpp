#include "common/csv_field.h"

namespace commbench {

std::string csv_field(std::string_view value) {
  const bool formula = !value.empty() && std::string_view("=+-@\t\r").find(value.front()) != std::string_view::npos;
  const bool needs_quotes = formula || value.find_first_of(",\"\r\n") != std::string_view::npos ||
                            (!value.empty() && (value.front() == ' ' || value.back() == ' '));
  if (!needs_quotes) return std::string(value);
  std::string out = formula ? "\"'" : "\"";
  for (char c : value) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

}  // namespace commbench
