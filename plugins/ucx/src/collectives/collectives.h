// commbench's collective algorithms over a Channel (channel.h): what the ucx plugin runs for
// every collective, since UCP has none. docs/backends/ucx.md describes each algorithm and what
// busbw means for it.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "channel.h"
#include "commbench/sdk/scratch_buffer.hpp"

namespace commbench::ucx_backend {

enum class Algorithm {
  kAuto,               // by size: small_message_bytes splits latency- and bandwidth-bound sizes
  kRing,               // allreduce (reduce-scatter + allgather), allgather, reducescatter
  kRecursiveDoubling,  // allreduce, allgather (powers of two; others fall back to the ring)
  kPairwise,           // reducescatter (direct exchange), alltoall
  kBinomial,           // broadcast, reduce
  kLinear,             // gather, scatter
  kDissemination,      // barrier
};

std::string_view algorithm_name(Algorithm algorithm);
std::optional<Algorithm> parse_algorithm(std::string_view name);

// What the experiment forced (kAuto: choose by size).
struct AlgorithmChoice {
  Algorithm allreduce = Algorithm::kAuto;
  Algorithm allgather = Algorithm::kAuto;
  Algorithm reducescatter = Algorithm::kAuto;
  size_t small_message_bytes = 64 * 1024;  // per rank: below it the small-message algorithm
};

// Throws PluginError(CB_ERR_INVALID_ARGUMENT) naming the op and the valid algorithms when a
// forced algorithm does not exist for its op.
void validate_choice(const AlgorithmChoice& choice);

// The algorithm that runs `op` for `bytes` per rank (the record's bytes) on `world` ranks.
Algorithm chosen_algorithm(cb_op op, size_t bytes, int world, const AlgorithmChoice& choice);

// Buffers the algorithms reuse across calls, so the timed loop does not allocate.
struct Scratch {
  sdk::ScratchBuffer a;
  sdk::ScratchBuffer b;
};

// Runs one collective to completion. Ops other than the nine collectives of ABI 1.0 fail with
// CB_ERR_UNIMPLEMENTED.
void run_collective(Channel& channel, cb_op op, const CollectiveArgs& args,
                    const AlgorithmChoice& choice, Scratch& scratch);

}  // namespace commbench::ucx_backend
