#include "nccl_options.h"

#include <algorithm>
#include <string_view>

#include "commbench/sdk/plugin_options.hpp"

namespace commbench::nccl_backend {

NcclOptions parse_nccl_options(const cb_option* options, size_t count, const char* plugin) {
  NcclOptions o;
  if (std::string_view(plugin) == "ncclx")
    sdk::apply_options<NcclOptions>(kNcclxOptionTable, plugin, options, count, o);
  else
    sdk::apply_options<NcclOptions>(kNcclOptionTable, plugin, options, count, o);
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
