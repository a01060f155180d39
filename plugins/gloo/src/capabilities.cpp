#include "capabilities.h"

#include <algorithm>
#include <cstring>

namespace commbench::gloo_backend {
namespace {

constexpr uint64_t all_bits(int count) { return (uint64_t{1} << count) - 1; }

}  // namespace

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

void write_capabilities(const cb_capabilities& caps, cb_capabilities* out) {
  // The caller sets struct_size (docs/plugin-abi.md §3); one built against an older header
  // passes a smaller struct: fill only what fits and leave struct_size as the caller set it.
  // A zero struct_size is taken as this header's size.
  if (out->struct_size == 0) {
    *out = caps;
    return;
  }
  const size_t size = std::min(out->struct_size, sizeof(cb_capabilities));
  const size_t caller_size = out->struct_size;
  std::memcpy(out, &caps, size);
  out->struct_size = caller_size;
}

}  // namespace commbench::gloo_backend
