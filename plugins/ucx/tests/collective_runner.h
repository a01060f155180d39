// Runs one collective case on one thread per rank over the in-memory channel
// (memory_channel.h), twice in a row, and checks with GoogleTest assertions what every algorithm
// must respect: the result against a reference computed directly from all ranks' inputs, no
// message left unreceived, no write outside the buffers, an untouched input out of place, and
// an untouched receive buffer where the ABI defines none (reduce, gather: non-roots).
#pragma once

#include <cstddef>
#include <string>

#include "collectives/collectives.h"

namespace commbench::ucx_backend::test {

struct Case {
  cb_op op;
  Algorithm forced;  // allreduce, allgather, reducescatter; kAuto elsewhere
  int world;
  size_t count;
  bool in_place;
  cb_dtype dtype = CB_DTYPE_F32;
  cb_redop redop = CB_REDOP_SUM;
  int root = 0;
  size_t threshold = 64 * 1024;  // AlgorithmChoice::small_message_bytes
  size_t ring_bytes = 4 * 1024 * 1024;
  size_t segment_bytes = 0;  // AlgorithmChoice's default: whole blocks
  // Sends complete only once received, as UCX's rendezvous protocol makes large ones
  // (memory_channel.h); otherwise they are buffered, as eager messages are.
  bool rendezvous = false;
  // Odd ranks in place, even ranks out of place (`in_place` is then ignored): each rank may
  // choose for itself (backend.h), so nothing an algorithm decides may depend on it.
  bool mixed_placement = false;
};

std::string describe(const Case& c);
AlgorithmChoice choice_for(const Case& c);

// Failures are reported to the running test; check ::testing::Test::HasFailure() after.
void run_and_check(const Case& c);

}  // namespace commbench::ucx_backend::test
