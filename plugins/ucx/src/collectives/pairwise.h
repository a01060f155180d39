// Pairwise exchange: every rank talks to every other rank directly, n-1 messages each way.
#pragma once

#include "channel.h"
#include "scratch.h"

namespace commbench::ucx_backend {

// Block j goes straight to rank j; every rank reduces its own block from all n contributions.
// All n-1 exchanges are in flight at once: one round of latency, for small messages.
void pairwise_reducescatter(Channel& channel, const CollectiveArgs& args, Scratch& scratch);
// Round i (1..n-1) sends to rank+i and receives from rank-i: every round is a permutation, so
// no rank receives from two peers at once.
void pairwise_alltoall(Channel& channel, const CollectiveArgs& args, Scratch& scratch);

}  // namespace commbench::ucx_backend
