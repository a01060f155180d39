// Which GPU a worker uses: the rule lives in the plugin SDK (commbench/sdk/device_choice.hpp) so
// that the core and the GPU plugins, which apply it separately, always pick the same device.
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "commbench/sdk/device_choice.hpp"

namespace commbench {

using sdk::DeviceChoice;
using sdk::choose_device;

// The backend's own `device` option (the NCCL plugins take one) as a device index, so that core
// and plugin bind the same GPU; nullopt when absent or not a number (the plugin then rejects its
// own option with a message).
inline std::optional<int> device_option(const std::map<std::string, std::string>& backend_options) {
  const auto it = backend_options.find("device");
  if (it == backend_options.end()) return std::nullopt;
  try {
    size_t used = 0;
    const int d = std::stoi(it->second, &used);
    if (used == it->second.size()) return d;
  } catch (const std::exception&) {}
  return std::nullopt;
}

}  // namespace commbench
