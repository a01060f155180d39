// Untimed traffic at communicator creation that maps UCX's shared-memory receive buffers into
// every process before anything is timed (docs/backends/ucx.md, "Priming the eager path").
#pragma once

#include <cstddef>

#include "channel.h"

namespace commbench::ucx_backend {

// Below UCX's default shared-memory segment (8 KiB plus headers, UCX_POSIX_SEG_SIZE = 8256):
// each message is one eager copy that fills one receive buffer.
inline constexpr size_t kPrimeMessageBytes = 8000;

// Every rank sends `messages` messages of `bytes` to every other rank and receives as many from
// each, one peer distance at a time (rank r sends to r + d and receives from r - d), so that
// at most `messages` are in flight per pair. A no-op for one rank or zero messages. Must run on
// every rank with the same arguments; `messages` at most kChannelSteps.
void prime_peers(Channel& ch, int messages, size_t bytes);

}  // namespace commbench::ucx_backend
