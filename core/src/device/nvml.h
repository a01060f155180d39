// NVML (libnvidia-ml.so.1, shipped with the driver, not the toolkit), loaded with dlopen for
// metadata and telemetry. No nvml.h is needed: the few prototypes are declared in nvml.cpp with
// NVML's ABI (nvmlReturn_t is an int, nvmlDevice_t a pointer). Everything here is best-effort:
// what NVML cannot tell is recorded as unavailable, with the reason, and never fails a run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace commbench {

class Nvml {
 public:
  // The process's NVML, initialised on first call; nullptr with `why` when it cannot be.
  static const Nvml* get(std::string* why = nullptr);

  // Identity of the device with this PCI bus id ("0000:17:00.0", as cudaDeviceGetPCIBusId
  // writes it): name, UUID, PCI bus id, driver and CUDA driver versions, NVLink links up.
  nlohmann::json identity(const std::string& pci_bus_id) const;
  // Telemetry now: SM and memory clocks (MHz), temperature (C), power (W).
  nlohmann::json telemetry(const std::string& pci_bus_id) const;
  // Every GPU of the host and, for each pair, their common ancestor as nvidia-smi topo -m
  // names it (same board, PIX/PXB switch(es), PHB host bridge, NODE, SYS).
  nlohmann::json topology() const;

  // The agent's telemetry sampler and idle check: every GPU of the host by NVML index. Fields
  // NVML cannot give (not supported by the device or the library) stay empty.
  struct Reading {
    std::optional<double> temperature_c, power_w, sm_clock_mhz, memory_clock_mhz;
    std::optional<double> utilization_gpu_pct, utilization_memory_pct;
    std::optional<uint64_t> throttle_reasons;  // nvmlClocksThrottleReasons bit mask
    std::optional<unsigned> processes;         // compute processes running on it
  };
  unsigned device_count() const;
  Reading read(unsigned index) const;
  // Name and UUID by NVML index (metadata).
  nlohmann::json describe(unsigned index) const;
  // Driver and CUDA driver versions.
  nlohmann::json driver() const;

 private:
  Nvml() = default;
  struct Api;
  const Api* api_ = nullptr;
};

// What the metadata's "nvml" key holds: the facts, or {"available": false, "reason": ...}.
nlohmann::json nvml_unavailable(const std::string& why);

}  // namespace commbench
