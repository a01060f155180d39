// Which GPU a worker uses: the rule lives in the plugin SDK (commbench/sdk/device_choice.hpp) so
// that the core and the GPU plugins, which apply it separately, always pick the same device.
#pragma once

#include "commbench/sdk/device_choice.hpp"

namespace commbench {

using sdk::DeviceChoice;
using sdk::choose_device;

}  // namespace commbench
