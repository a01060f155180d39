// What a data-parallel training step needs in memory, computed from the model (issue 15 §3,
// docs/workloads.md "Memory"): parameters, gradients, optimizer state (with the fp32 master
// copy of mixed precision), and activations for a batch. ZeRO's accounting (Rajbhandari et al.
// 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models", §3.1): mixed-
// precision Adam holds 2P (fp16 params) + 2P (fp16 grads) + 12P (fp32 master, momentum,
// variance) = 16P bytes. FSDP (ZeRO-3) divides everything but activations by the world size.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include <nlohmann/json.hpp>

#include "workload/model.h"

namespace commbench::workload {

enum class Optimizer { Sgd, Momentum, Adam };

std::string_view optimizer_name(Optimizer o);
std::optional<Optimizer> optimizer_from_name(std::string_view name);
std::span<const std::string_view> optimizer_names();

// fp32 values the optimizer keeps per parameter: sgd 0, momentum 1 (the velocity), adam 2
// (first and second moments).
int optimizer_states_per_parameter(Optimizer o);

struct MemoryInputs {
  uint64_t parameters = 0;
  uint64_t activation_elements_per_sample = 0;  // Σ over layers of their output elements
  uint64_t dtype_bytes = 4;                     // parameters, gradients and activations
  Optimizer optimizer = Optimizer::Adam;
  uint64_t batch_size = 1;                      // per rank
  int world_size = 1;
  bool sharded = false;  // FSDP / ZeRO-3: parameters, gradients, optimizer state split over ranks
};

// Bytes per rank.
struct MemoryEstimate {
  uint64_t parameters_per_rank = 0;       // P, or ceil(P / world) when sharded
  uint64_t parameter_bytes = 0;           // parameters_per_rank × dtype size
  uint64_t gradient_bytes = 0;            // parameters_per_rank × dtype size
  uint64_t optimizer_state_bytes = 0;     // parameters_per_rank × states × 4
  uint64_t master_weight_bytes = 0;       // parameters_per_rank × 4 when dtype is 16-bit, else 0
  uint64_t activation_bytes_per_sample = 0;  // activation elements × dtype size
  uint64_t activation_bytes = 0;          // × batch size
  // parameter + gradient + optimizer state + master weights (what sharding divides).
  uint64_t model_state_bytes() const;
  uint64_t total_bytes() const;  // model state + activations
};

MemoryEstimate estimate_memory(const MemoryInputs& in);

// The model's parameter and activation counts into `in` (the rest as given).
MemoryInputs with_model(MemoryInputs in, const Model& m);

// {"parameter_bytes": ..., ..., "total_bytes": ..., "convention": "..."} (docs/output.md "memory").
nlohmann::ordered_json to_json(const MemoryEstimate& e);

}  // namespace commbench::workload
