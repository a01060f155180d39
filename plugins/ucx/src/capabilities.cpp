#include "capabilities.h"

#include "backend.h"
#include "commbench/sdk/capabilities.hpp"

namespace commbench::ucx_backend {

cb_capabilities static_capabilities() {
  cb_capabilities caps{};
  caps.struct_size = sizeof(cb_capabilities);
  caps.ops = sdk::all_bits(CB_OP_COUNT_V1);
  caps.dtypes = sdk::all_bits(CB_DTYPE_COUNT_V1);
  caps.reduce_dtypes = sdk::all_bits(CB_DTYPE_COUNT_V1);
  caps.redops = sdk::all_bits(CB_REDOP_COUNT_V1);
  caps.mem_types = CB_BIT(CB_MEM_HOST);
  caps.flags = CB_CAP_IN_PLACE | CB_CAP_OUT_OF_PLACE | CB_CAP_ASYNC | CB_CAP_NEEDS_PROGRESS;
  return caps;
}

cb_capabilities runtime_capabilities(const cb_backend& backend) {
  cb_capabilities caps = static_capabilities();
  if (backend.supports_cuda()) caps.mem_types |= CB_BIT(CB_MEM_CUDA);
  return caps;
}

}  // namespace commbench::ucx_backend
