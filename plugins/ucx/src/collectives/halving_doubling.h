// Recursive halving and doubling: the ring's bytes (each rank sends (n-1)/n of the data per
// phase, on powers of two) in log2(n) rounds instead of n-1, so fewer handshakes and, where ranks
// share cores, fewer context switches. Any world size: the ranks beyond the largest power of two
// fold into partners first and get their result after (fold.h), which costs one extra whole-buffer
// transfer on those pairs.
#pragma once

#include "channel.h"
#include "scratch.h"

namespace commbench::ucx_backend {

// Rabenseifner's allreduce: reduce-scatter by recursive halving, allgather by recursive doubling.
void rabenseifner_allreduce(Channel& channel, const CollectiveArgs& args, Scratch& scratch);
// Reduce-scatter by recursive halving (a folded rank's block travels back to it at the end).
void recursive_halving_reducescatter(Channel& channel, const CollectiveArgs& args, Scratch& scratch);

}  // namespace commbench::ucx_backend
