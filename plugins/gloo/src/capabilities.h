// What the gloo backend supports: the static set reported before init, and the checks
// post() runs against it so an unsupported case is reported as such, never attempted.
#pragma once

#include "commbench/backend.h"

namespace commbench::gloo_backend {

// Every op of ABI 1.0; every dtype for data movement; every dtype but fp8 for reductions
// (gloo has no fp8 arithmetic); sum/prod/min/max (gloo has no average); host memory only.
// Collectives complete inside post(); send/recv return at once and complete in test/wait,
// hence CB_CAP_ASYNC.
cb_capabilities static_capabilities();

inline bool has_bit(uint64_t set, int bit) { return (set >> bit) & 1u; }

}  // namespace commbench::gloo_backend
