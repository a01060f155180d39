// Dissemination barrier (Hensgen, Finkel, Manber): in round k every rank signals rank + 2^k
// and waits for rank - 2^k; after ceil(log2 n) rounds every rank has heard, directly or
// through others, from every rank, for any n (no power of two needed).
#pragma once

#include "channel.h"

namespace commbench::ucx_backend {

void dissemination_barrier(Channel& channel);

}  // namespace commbench::ucx_backend
