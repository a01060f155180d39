#include "capabilities.h"

#include "commbench/sdk/capabilities.hpp"

namespace commbench::gloo_backend {

using sdk::all_bits;

cb_capabilities static_capabilities() {
  cb_capabilities caps{};
  caps.struct_size = sizeof(cb_capabilities);
  caps.ops = all_bits(CB_OP_COUNT_V1);
  caps.dtypes = all_bits(CB_DTYPE_COUNT_V1);
  caps.reduce_dtypes = all_bits(CB_DTYPE_COUNT_V1) & ~CB_BIT(CB_DTYPE_F8E4M3) & ~CB_BIT(CB_DTYPE_F8E5M2);
  caps.redops = CB_BIT(CB_REDOP_SUM) | CB_BIT(CB_REDOP_PROD) | CB_BIT(CB_REDOP_MIN) | CB_BIT(CB_REDOP_MAX);
  caps.mem_types = CB_BIT(CB_MEM_HOST);
  caps.flags = CB_CAP_IN_PLACE | CB_CAP_OUT_OF_PLACE | CB_CAP_ASYNC;
  return caps;
}

}  // namespace commbench::gloo_backend
