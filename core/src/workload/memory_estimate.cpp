#include "workload/memory_estimate.h"

#include <array>
#include <cstdint>

namespace commbench::workload {
namespace {

constexpr std::array<std::string_view, 3> kOptimizerNames{"sgd", "momentum", "adam"};
constexpr uint64_t kFp32Bytes = 4;  // optimizer state and master weights are fp32 (ZeRO §3.1)

// Products and sums saturate: a model too big to count in bytes must read as too big to
// allocate (the case then fails or is skipped), never wrap around to a small number.
uint64_t times(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
uint64_t plus(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

}  // namespace

std::string_view optimizer_name(Optimizer o) { return kOptimizerNames.at(static_cast<size_t>(o)); }

std::optional<Optimizer> optimizer_from_name(std::string_view name) {
  for (size_t i = 0; i < kOptimizerNames.size(); ++i)
    if (kOptimizerNames[i] == name) return static_cast<Optimizer>(i);
  return std::nullopt;
}

std::span<const std::string_view> optimizer_names() { return kOptimizerNames; }

int optimizer_states_per_parameter(Optimizer o) {
  switch (o) {
    case Optimizer::Sgd: return 0;
    case Optimizer::Momentum: return 1;
    case Optimizer::Adam: return 2;
  }
  return 0;
}

uint64_t MemoryEstimate::model_state_bytes() const {
  return plus(plus(parameter_bytes, gradient_bytes), plus(optimizer_state_bytes, master_weight_bytes));
}

uint64_t MemoryEstimate::total_bytes() const { return plus(model_state_bytes(), activation_bytes); }

MemoryEstimate estimate_memory(const MemoryInputs& in) {
  MemoryEstimate e;
  const uint64_t world = in.world_size > 0 ? static_cast<uint64_t>(in.world_size) : 1;
  // ZeRO-3 gives each rank a contiguous shard; the last may be short, the largest is ceil(P/N).
  e.parameters_per_rank = in.sharded ? (in.parameters + world - 1) / world : in.parameters;
  e.parameter_bytes = times(e.parameters_per_rank, in.dtype_bytes);
  e.gradient_bytes = times(e.parameters_per_rank, in.dtype_bytes);
  e.optimizer_state_bytes =
      times(times(e.parameters_per_rank, static_cast<uint64_t>(optimizer_states_per_parameter(in.optimizer))), kFp32Bytes);
  // Mixed precision keeps an fp32 copy of the weights for the update (Micikevicius et al. 2018),
  // whatever the optimizer; with 16-bit Adam this makes ZeRO's K = 12.
  e.master_weight_bytes = in.dtype_bytes == 2 ? times(e.parameters_per_rank, kFp32Bytes) : 0;
  e.activation_bytes_per_sample = times(in.activation_elements_per_sample, in.dtype_bytes);
  e.activation_bytes = times(e.activation_bytes_per_sample, in.batch_size);
  return e;
}

MemoryInputs with_model(MemoryInputs in, const Model& m) {
  in.parameters = m.parameters();
  in.activation_elements_per_sample = m.activations_per_sample();
  return in;
}

nlohmann::ordered_json to_json(const MemoryEstimate& e) {
  return {{"parameters_per_rank", e.parameters_per_rank},
          {"parameter_bytes", e.parameter_bytes},
          {"gradient_bytes", e.gradient_bytes},
          {"optimizer_state_bytes", e.optimizer_state_bytes},
          {"master_weight_bytes", e.master_weight_bytes},
          {"model_state_bytes", e.model_state_bytes()},
          {"activation_bytes_per_sample", e.activation_bytes_per_sample},
          {"activation_bytes", e.activation_bytes},
          {"total_bytes", e.total_bytes()}};
}

}  // namespace commbench::workload
