// The `expect` key of a run: performance a cluster must reach (issue 14 §3), checked after the
// job by `commbench check` (python/commbench/expect.py, which evaluates what is validated here).
//
//   expect = { busbw_gbps = ">= 180" }                       every case of the run
//   expect = [ { op = "allreduce", min_size = "1MiB", busbw_gbps = ">= 180" },
//              { max_size = "8KiB", time_us = "<= 30" } ]     per op and size range
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "experiment/run_settings.h"
#include "experiment/toml_fields.h"

namespace commbench {

// The metrics a condition may name (a case record's field; time_us = its mean).
std::span<const std::string_view> expect_metrics();

// Reads `expect` (a table or an array of tables); nothing on any error (all reported).
std::optional<std::vector<Expectation>> read_expect(DiagnosticSink& sink, const toml::node& node);

// [{"ops": [...], "min_bytes": n, "max_bytes": n, "<metric>": "<condition>"}...] for
// summary.json; scope keys only where written.
nlohmann::json expect_to_json(const std::vector<Expectation>& expect);
// The inverse (the workers' copy of the execution); positions are not kept.
std::vector<Expectation> expect_from_json(const nlohmann::json& j);

}  // namespace commbench
