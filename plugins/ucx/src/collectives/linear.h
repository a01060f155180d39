// Gather and scatter straight between the root and every other rank (linear, not a tree), all
// n-1 transfers in flight at once: the root's link carries all the data whatever the tree, and
// one round has the lowest latency.
#pragma once

#include "channel.h"

namespace commbench::ucx_backend {

void linear_gather(Channel& channel, const CollectiveArgs& args);
void linear_scatter(Channel& channel, const CollectiveArgs& args);

}  // namespace commbench::ucx_backend
