// Placeholders an output folder may hold (docs/output.md, "{hardware}"): one list, read by the
// experiment file's output_dir, by -o, and by the code that expands them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace commbench {

// The GPU, driver and CUDA version of the host (seed 003), or "cpu-only".
inline constexpr std::string_view kHardwarePlaceholder = "{hardware}";

// The first "{...}" in `dir` that is not a known placeholder: a typo ("{hardwar}") would
// otherwise name a folder literally.
inline std::optional<std::string> unknown_placeholder(std::string_view dir) {
  for (size_t open = dir.find('{'); open != std::string_view::npos; open = dir.find('{', open + 1)) {
    const size_t close = dir.find('}', open);
    if (close == std::string_view::npos) return std::string(dir.substr(open));
    const std::string_view name = dir.substr(open, close - open + 1);
    if (name != kHardwarePlaceholder) return std::string(name);
  }
  return std::nullopt;
}

}  // namespace commbench
