// Executes a launched batch (one group's ops on one communicator) on a stream's worker thread:
// collectives through the per-rank staging slots, p2p through the per-pair chunk rings.
#pragma once

#include <vector>

#include "comm.hpp"

namespace simgpu {

// Runs on the stream: checks cross-rank consistency, applies fault knobs, moves the data. Errors become
// the communicator's async error and ncclGetLastError's text.
void execute_batch(Comm& c, const std::vector<OpDesc>& ops);

}  // namespace simgpu
