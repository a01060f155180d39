// commbench's collective algorithms over a Channel (channel.h): what the ucx plugin runs for
// every collective, since UCP has none. docs/backends/ucx.md describes each algorithm and what
// busbw means for it.
#pragma once

#include "channel.h"
#include "scratch.h"
#include "select.h"

namespace commbench::ucx_backend {

// Runs one collective to completion on this rank; every rank of the channel calls it with the
// same op, count, dtype, redop, root and choice. Host buffers, with the ABI's count and
// in-place semantics (backend.h, cb_op_args). Fails with PluginError: CB_ERR_UNIMPLEMENTED
// for an op that is not one of the nine collectives of ABI 1.0, CB_ERR_INVALID_ARGUMENT for a
// bad dtype, redop or root or a forced algorithm foreign to the op, and whatever the channel
// throws. count == 0 moves nothing and returns at once (barrier ignores count).
void run_collective(Channel& channel, cb_op op, const CollectiveArgs& args,
                    const AlgorithmChoice& choice, Scratch& scratch);

}  // namespace commbench::ucx_backend
