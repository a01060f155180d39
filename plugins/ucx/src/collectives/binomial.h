// Binomial trees rooted at any rank (ranks renumbered relative to the root): ceil(log2 n)
// rounds; a rank receives once from its parent and forwards to (broadcast), or accumulates
// from (reduce), the subtrees below it.
#pragma once

#include "channel.h"
#include "scratch.h"

namespace commbench::ucx_backend {

void binomial_broadcast(Channel& channel, const CollectiveArgs& args);
// The result lands at the root only; no other rank's recvbuf is written.
void binomial_reduce(Channel& channel, const CollectiveArgs& args, Scratch& scratch);

}  // namespace commbench::ucx_backend
