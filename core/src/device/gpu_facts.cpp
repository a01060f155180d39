#include "device/gpu_facts.h"

#include "device/nvml.h"

namespace commbench {
namespace {

std::string bus_id(const GpuDevice& gpu) {
  const nlohmann::json d = gpu.describe();
  return d.value("pci_bus_id", "");
}

}  // namespace

nlohmann::json gpu_identity(const GpuDevice& gpu) {
  nlohmann::json j;
  j["cuda"] = gpu.describe();
  std::string why;
  const Nvml* nvml = Nvml::get(&why);
  j["nvml"] = nvml ? nvml->identity(j["cuda"].value("pci_bus_id", "")) : nvml_unavailable(why);
  return j;
}

nlohmann::json gpu_telemetry(const GpuDevice& gpu) {
  std::string why;
  const Nvml* nvml = Nvml::get(&why);
  // Why NVML is unavailable is said once, under gpu.nvml.
  return nvml ? nvml->telemetry(bus_id(gpu)) : nlohmann::json{{"available", false}};
}

nlohmann::json gpu_topology() {
  std::string why;
  const Nvml* nvml = Nvml::get(&why);
  return nvml ? nvml->topology() : nvml_unavailable(why);
}

}  // namespace commbench
