// post(): checks an op and starts it.
#pragma once

#include <cstdint>
#include <memory>

#include "commbench/backend.h"
#include "request.h"

struct cb_comm;

namespace commbench::gloo_backend {

std::unique_ptr<cb_request> post_op(cb_comm& comm, const cb_op_args& args);
// post + wait without a request for collectives (they run inside post anyway): the core times
// each host-clock collective through this call (ABI 1.1 `complete`).
void complete_op(cb_comm& comm, const cb_op_args& args, int32_t timeout_ms);

}  // namespace commbench::gloo_backend
