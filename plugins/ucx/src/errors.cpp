#include "errors.h"

namespace commbench::ucx_backend {

cb_status status_from_ucs(ucs_status_t status) {
  switch (status) {
    case UCS_OK: return CB_OK;
    case UCS_ERR_TIMED_OUT:
    case UCS_ERR_ENDPOINT_TIMEOUT: return CB_ERR_TIMEOUT;
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_REJECTED:
    case UCS_ERR_CANCELED: return CB_ERR_REMOTE;
    case UCS_ERR_NO_MEMORY:
    case UCS_ERR_NO_RESOURCE:
    case UCS_ERR_EXCEEDS_LIMIT:
    case UCS_ERR_OUT_OF_RANGE: return CB_ERR_RESOURCE_EXHAUSTED;
    case UCS_ERR_INVALID_PARAM:
    case UCS_ERR_MESSAGE_TRUNCATED: return CB_ERR_INVALID_ARGUMENT;
    case UCS_ERR_UNSUPPORTED: return CB_ERR_UNIMPLEMENTED;
    case UCS_ERR_NO_DEVICE:
    case UCS_ERR_NO_ELEM: return CB_ERR_UNAVAILABLE;
    default: return CB_ERR_INTERNAL;
  }
}

void fail_ucs(std::string_view call, ucs_status_t status, std::string_view hint) {
  std::string message(call);
  message += ": ";
  message += ucs_status_string(status);
  if (!hint.empty()) message.append(" (").append(hint).append(")");
  fail(status_from_ucs(status), message);
}

}  // namespace commbench::ucx_backend
