// The `model` run setting (docs/workloads.md): a preset name ("resnet50"), a layer list
// `{ layers = [ { name, parameters, activations, flops }, ... ] }`, or an even split
// `{ parameters = N, layers = L, activations = A, flops = F }` (totals per sample).
#pragma once

#include <optional>
#include <string_view>

#include <toml++/toml.h>

#include "experiment/toml_fields.h"
#include "workload/model.h"

namespace commbench {

// Every error reported at the offending node; nothing when any.
std::optional<workload::Model> read_model(DiagnosticSink& sink, const toml::node& node, std::string_view key);

}  // namespace commbench
