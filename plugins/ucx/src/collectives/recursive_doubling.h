// Recursive doubling: log2(n) rounds of exchanges with rank ^ 2^k. Latency-optimal for small
// messages; each rank sends the whole buffer log2(n) times (allreduce).
#pragma once

#include "channel.h"
#include "scratch.h"

namespace commbench::ucx_backend {

// Any world size: the ranks beyond the largest power of two fold into partners first and get
// the result after.
void recursive_doubling_allreduce(Channel& channel, const CollectiveArgs& args, Scratch& scratch);
// Power-of-two worlds only (select.cpp runs the ring otherwise); fails with CB_ERR_INTERNAL
// elsewhere.
void recursive_doubling_allgather(Channel& channel, const CollectiveArgs& args);

}  // namespace commbench::ucx_backend
