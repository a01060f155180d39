// The keys an experiment file has at its top level, outside [defaults] and [[run]] (one list:
// the top-level reader accepts them, a [[run]] that holds one is told where it belongs).
#pragma once

#include <array>
#include <string_view>

namespace commbench {

inline constexpr std::array<std::string_view, 8> kTopLevelKeys{"name",     "output_dir", "seed", "plugin_path",
                                                              "outputs",  "defaults",   "run",  "report"};

}  // namespace commbench
