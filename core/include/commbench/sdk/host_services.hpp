// Taking a copy of the host's services at init(), per the ABI's struct_size rule: fields the
// host's struct lacks stay zero. Header-only plugin SDK.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#include "commbench/backend.h"
#include "commbench/sdk/plugin_error.hpp"

namespace commbench::sdk {

// Copies and validates the services a bootstrapping plugin needs (ABI 1.0's bootstrap
// collectives and key/value store, a sane rank/world); `plugin` names it in errors.
inline cb_host_services copy_host_services(const cb_host_services& given, std::string_view plugin) {
  if (given.struct_size < CB_STRUCT_SIZE(cb_host_services, kv_get))
    fail(CB_ERR_INVALID_ARGUMENT,
         "host services struct is too small (" + std::to_string(given.struct_size) + " bytes): the " +
             std::string(plugin) + " plugin needs the bootstrap and key/value services of ABI 1.0");
  cb_host_services host{};  // fields of a later minor than the host's stay zero (1.3: flags)
  std::memcpy(&host, &given, std::min(given.struct_size, sizeof(host)));
  if (host.bootstrap_allgather == nullptr || host.bootstrap_broadcast == nullptr ||
      host.bootstrap_barrier == nullptr || host.kv_set == nullptr || host.kv_get == nullptr)
    fail(CB_ERR_INVALID_ARGUMENT, "host services lack a bootstrap or key/value function, which the " +
                                      std::string(plugin) + " plugin needs to connect its ranks");
  if (host.world_size < 1 || host.rank < 0 || host.rank >= host.world_size)
    fail(CB_ERR_INVALID_ARGUMENT, "host services give rank " + std::to_string(host.rank) +
                                      " of world size " + std::to_string(host.world_size));
  if (host.num_options > 0 && host.options == nullptr)
    fail(CB_ERR_INVALID_ARGUMENT, "host services give an options count but no options");
  return host;
}

}  // namespace commbench::sdk
