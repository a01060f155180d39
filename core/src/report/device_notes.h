// What the numbers of a GPU execution are not: times from the simulated GPU of the tests
// (tests/simgpu, a CPU emulation that names itself) and from ranks sharing a GPU
// (oversubscribe_gpu, a correctness mode). The console and summary.md say so beside them.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace commbench {

// The device name from an execution's metadata when it is the simulated GPU's.
inline std::optional<std::string> simulated_gpu_name(const nlohmann::json& metadata) {
  static const auto name_at = "/ranks/0/gpu/cuda/name"_json_pointer;
  if (!metadata.is_object() || !metadata.contains(name_at)) return std::nullopt;
  const nlohmann::json& name = metadata.at(name_at);
  // The simulation's fixed name: "commbench simulated GPU (not a real device)" (docs/gpu.md).
  if (name.is_string() && name.get<std::string>().find("simulated") != std::string::npos) return name.get<std::string>();
  return std::nullopt;
}

}  // namespace commbench
