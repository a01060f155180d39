// Host buffers the algorithms borrow from the communicator, so that a collective in the timed
// loop never allocates: they grow to the largest size seen and are reused by every later call.
#pragma once

#include "commbench/sdk/scratch_buffer.hpp"

namespace commbench::ucx_backend {

struct Scratch {
  sdk::ScratchBuffer a;  // incoming data (the ring's partials, the trees' children)
  sdk::ScratchBuffer b;  // a second buffer where one round sends and receives at once
};

}  // namespace commbench::ucx_backend
