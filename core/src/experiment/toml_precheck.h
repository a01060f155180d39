// A scan of the experiment text before TOML++ sees it, for input that TOML++ 3.3 (the version
// Debian ships) handles with undefined behaviour: a non-ASCII character where it tests for
// whitespace reaches __builtin_unreachable (tomlplusplus issues #190 and #295, fixed upstream
// by PR #305). Outside strings and comments a non-ASCII character is never valid TOML 1.0, and
// inside a multi-line basic string it is only a hazard as the first character after a
// line-ending backslash; both are reported here, with a position, and never parsed. So is the
// first control character (a binary file), at its own byte rather than where TOML++ gives up.
#pragma once

#include <optional>
#include <string_view>

#include "common/diagnostic.h"

namespace commbench {

struct PrecheckFinding {
  int line = 0;    // 1-based
  int column = 0;  // 1-based, in bytes
  const char* message = "";
  size_t offset = 0;  // from the start of the text, in bytes
};

std::optional<PrecheckFinding> precheck_toml(std::string_view text);

}  // namespace commbench
