// Host buffers the algorithms borrow from the communicator, so that a collective in the timed
// loop never allocates: they grow to the largest size seen and are reused by every later call.
#pragma once

#include <vector>

#include "channel.h"
#include "commbench/sdk/scratch_buffer.hpp"

namespace commbench::ucx_backend {

struct Scratch {
  sdk::ScratchBuffer a;  // incoming data (the pipelines' segment slots, the trees' children)
  sdk::ScratchBuffer b;  // a second buffer where one round sends and receives at once
  sdk::ScratchBuffer c;  // a third: the ring reduce-scatter's partials alternate between b and c
  std::vector<Channel::Ticket> tickets;  // the pipelines' sends, to wait for before reusing a buffer
};

}  // namespace commbench::ucx_backend
