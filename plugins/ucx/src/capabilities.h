// What the ucx backend supports. Every op, dtype and reduce op of ABI 1.0 on host memory: the
// collectives are commbench's own algorithms over UCP tags with the SDK's host reductions
// (f16/bf16/fp8 through f32). send/recv return at once and advance only while test()/wait()
// run (CB_CAP_ASYNC | CB_CAP_NEEDS_PROGRESS); collectives complete inside post().
#pragma once

#include "commbench/backend.h"

struct cb_backend;

namespace commbench::ucx_backend {

// Before init: what any UCX build gives (host memory).
cb_capabilities static_capabilities();
// After init: adds cuda memory (send/recv only) when the context reports CUDA support.
cb_capabilities runtime_capabilities(const cb_backend& backend);

}  // namespace commbench::ucx_backend
