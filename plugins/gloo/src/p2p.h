// send/recv through gloo unbound buffers. post() returns as soon as the transfer is queued;
// test() and wait() complete it (see transfer.h for how test() polls).
#pragma once

#include <cstdint>
#include <memory>

#include "request.h"

struct cb_comm;

namespace commbench::gloo_backend {

struct CheckedOp;

// Messages between two ranks are matched by the ABI tag (one gloo slot per tag) and, within a
// tag, in posting order.
std::unique_ptr<cb_request> post_send_or_recv(cb_comm& comm, const CheckedOp& op);

// Non-blocking; true once the request is complete (throws if it failed).
bool test_request(cb_request& request);

// Blocks until complete; timeout_ms < 0 waits up to the timeout_ms option.
void wait_request(cb_request& request, int32_t timeout_ms);

}  // namespace commbench::gloo_backend
