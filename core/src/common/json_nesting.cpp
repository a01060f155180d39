#include "common/json_nesting.h"

namespace commbench {

JsonExtent json_value_extent(std::string_view t, int max_nesting) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') {
        in_string = false;
        if (depth == 0) return {JsonExtent::End::Complete, i + 1};
      }
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '{': case '[':
        if (++depth > max_nesting) return {JsonExtent::End::TooDeep, i};
        break;
      case '}': case ']':
        if (depth == 0) return {JsonExtent::End::Complete, i};  // a scalar ends before it
        if (--depth == 0) return {JsonExtent::End::Complete, i + 1};
        break;
      case ',': case ' ': case '\t': case '\n': case '\r':
        if (depth == 0 && i > 0) return {JsonExtent::End::Complete, i};  // end of a scalar
        break;
      default: break;
    }
  }
  return {depth == 0 && !in_string && !t.empty() ? JsonExtent::End::Complete : JsonExtent::End::Truncated, t.size()};
}

}  // namespace commbench
