// The model a data-parallel workload plays (docs/workloads.md): per layer, the parameters whose
// gradients are reduced, the activations kept for backward and the forward FLOPs that size the
// compute. Presets are generated from the published architectures so the totals are exact and
// checkable (tests/unit/test_workload_model.cpp); `source` says where each figure comes from.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace commbench::workload {

struct Layer {
  std::string name;
  uint64_t parameters = 0;              // trainable parameter count
  uint64_t activations_per_sample = 0;  // activation ELEMENTS kept for backward, per sample
  double forward_flops_per_sample = 0;  // forward FLOPs per sample (backward taken as 2x forward)
};

struct Model {
  std::string name;    // preset name or "custom"
  std::string source;  // where the figures come from (paper / reference implementation)
  std::vector<Layer> layers;  // forward order
  uint64_t parameters() const;
  uint64_t activations_per_sample() const;
  double forward_flops_per_sample() const;
};

std::span<const std::string_view> model_preset_names();
std::optional<Model> model_preset(std::string_view name);

// A model of `parameters` split evenly over `layers` layers (the remainder on the first ones);
// activations and FLOPs likewise split from the totals given. Requires layers >= 1.
Model even_model(uint64_t parameters, int layers, uint64_t activations_per_sample = 0,
                 double forward_flops_per_sample = 0);

// Transformer figures shared by the presets and their tests (docs/workloads.md, "Presets").
struct TransformerShape {
  uint64_t layers, hidden, heads, vocab, sequence;
};
// Parameters of one encoder/decoder block: QKV, projection, two MLP matrices (4h), biases, two
// LayerNorms = 12h² + 13h.
uint64_t transformer_block_parameters(const TransformerShape& t);
// Korthikanti et al. 2022, eq. (1) with b = 1, no recomputation or parallelism: s·h·(34 + 5·a·s/h)
// BYTES at 16-bit activations (dropout masks at 1 byte); returned as 16-bit elements (bytes / 2).
uint64_t transformer_block_activations(const TransformerShape& t);
// Forward FLOPs of one block per sample: 24·s·h² + 4·s²·h (Narayanan et al. 2021, §5.1).
double transformer_block_flops(const TransformerShape& t);

// The execution JSON of a model (sent to the workers) and back.
nlohmann::json model_to_json(const Model& m);
Model model_from_json(const nlohmann::json& j);

}  // namespace commbench::workload
