// Ring algorithms: bandwidth-optimal for large messages. n-1 rounds per phase, each rank
// talking only to its two neighbours, each sending (n-1)/n of the data per phase. Pipelined:
// blocks travel in segments of about segment_bytes (ring.cpp).
#pragma once

#include <cstddef>

#include "channel.h"
#include "scratch.h"

namespace commbench::ucx_backend {

// Reduce-scatter of blocks as equal as possible (any count, also count < n), then allgather.
void ring_allreduce(Channel& channel, const CollectiveArgs& args, Scratch& scratch, size_t segment_bytes);
void ring_allgather(Channel& channel, const CollectiveArgs& args, Scratch& scratch, size_t segment_bytes);
void ring_reducescatter(Channel& channel, const CollectiveArgs& args, Scratch& scratch, size_t segment_bytes);

}  // namespace commbench::ucx_backend
