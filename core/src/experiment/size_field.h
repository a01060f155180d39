// The `sizes` key: an array of sizes, or a geometric range { min = ..., max = ..., factor = 2 }.
#pragma once

#include <optional>
#include <vector>

#include <toml++/toml.h>

#include "experiment/experiment.h"
#include "experiment/toml_fields.h"

namespace commbench {

// Reads `sizes`; records "sizes" and "sizes[i]" in `where` (for a range, every expanded size is
// at the range's position). Nothing on any error (all of them reported).
std::optional<std::vector<SizeSpec>> read_sizes(DiagnosticSink& sink, const toml::node& node,
                                                WhereMap& where);

}  // namespace commbench
