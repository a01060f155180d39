#include "nccl_options.h"

#include <algorithm>
#include <string_view>

#include "commbench/sdk/plugin_options.hpp"

namespace commbench::nccl_backend {

NcclOptions parse_nccl_options(const cb_option* options, size_t count, const char* plugin) {
  NcclOptions o;
  const bool ncclx = std::string_view(plugin) == "ncclx";
  auto small_int = [](std::string_view key, std::string_view value) {
    return static_cast<int>(sdk::parse_integer_option(key, value, 0, 1 << 16, "a non-negative integer"));
  };
  sdk::for_each_option(options, count, [&](std::string_view key, std::string_view value) {
    if (key == "blocking") o.blocking = sdk::parse_bool_option(key, value) ? 1 : 0;
    else if (key == "cga_cluster_size") o.cga_cluster_size = small_int(key, value);
    else if (key == "min_ctas") o.min_ctas = small_int(key, value);
    else if (key == "max_ctas") o.max_ctas = small_int(key, value);
    else if (key == "net_name") o.net_name = value;
    else if (key == "registration") o.registration = sdk::parse_bool_option(key, value);
    else if (key == "device") o.device = small_int(key, value);
    else if (key == "library" && ncclx) o.library = value;
    else if (key == "timeout_ms")
      o.timeout = std::chrono::milliseconds(sdk::parse_integer_option(
          key, value, 1, INT32_MAX, "a positive number of milliseconds, e.g. \"60000\""));
    else if (ncclx)
      sdk::unknown_option(plugin, key, {"blocking", "cga_cluster_size", "min_ctas", "max_ctas", "net_name",
                                        "registration", "device", "library", "timeout_ms"});
    else
      sdk::unknown_option(plugin, key, {"blocking", "cga_cluster_size", "min_ctas", "max_ctas", "net_name",
                                        "registration", "device", "timeout_ms"});
  });
  if (o.min_ctas && o.max_ctas && *o.min_ctas > *o.max_ctas)
    sdk::fail(CB_ERR_INVALID_ARGUMENT, "option min_ctas (" + std::to_string(*o.min_ctas) +
                                           ") is above max_ctas (" + std::to_string(*o.max_ctas) + ")");
  return o;
}

ncclConfig_t make_nccl_config(const NcclOptions& o) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = o.blocking.value_or(1);
  if (o.cga_cluster_size) config.cgaClusterSize = *o.cga_cluster_size;
  if (o.min_ctas) config.minCTAs = *o.min_ctas;
  if (o.max_ctas) config.maxCTAs = *o.max_ctas;
  // NCCL's own default maxCTAs is MAXCHANNELS (32 or 64 by version; larger values are clamped).
  else if (o.min_ctas) config.maxCTAs = std::max(*o.min_ctas, 64);
  if (!o.net_name.empty()) config.netName = o.net_name.c_str();
  return config;
}

}  // namespace commbench::nccl_backend
