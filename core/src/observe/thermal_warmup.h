// Thermal warm-up and the idle check before a run (docs/observability.md). The warm-up starts
// `commbench __warm-load` and waits until the devices reach the target temperature (GPUs through
// NVML when the run uses them, else the CPU through hwmon/thermal zones) or for a fixed time; it is
// repeated before an execution when the devices cooled below the target or, for a fixed time,
// after an idle gap. The idle check warns when GPUs are busy or the CPUs loaded.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "experiment/observe_settings.h"

namespace commbench {

// The hottest reading now of the devices that count: GPUs (NVML) when `gpus`, else CPU sensors.
// nullopt with `why` when there is no such sensor.
std::optional<double> device_temperature(bool gpus, std::string* why);

// Runs the warm-up when needed. `idle_s`: seconds since the previous execution on this agent
// ended (negative: none before). Returns the record (null when no warm-up was needed).
// `stop` is polled (an interrupt ends the warm-up early).
nlohmann::json thermal_warmup(const ThermalWarmup& w, bool gpus, double idle_s, const std::string& self_exe,
                              const std::function<bool()>& stop);

// Warnings when other work is running: GPU utilisation or processes (NVML), CPU load above half
// the logical CPUs. Printed to stderr by the caller; recorded in summary.json.
nlohmann::json idle_check(bool gpus);

}  // namespace commbench
