// post(): checks an op and starts it.
#pragma once

#include <memory>

#include "commbench/backend.h"
#include "request.h"

struct cb_comm;

namespace commbench::gloo_backend {

std::unique_ptr<cb_request> post_op(cb_comm& comm, const cb_op_args& args);

}  // namespace commbench::gloo_backend
