// Input patterns whose exact result does not depend on the order of reduction (small integers,
// exactly representable in every dtype), and the expected outputs, per op. As in nccl-tests, any
// mismatched element counts towards #wrong.
#pragma once

#include <cstdint>

#include "commbench/backend.h"
#include "common/ops.h"

namespace commbench {

struct CheckContext {
  OpKind op;
  cb_dtype dtype;
  cb_redop redop;  // reductions only
  int rank;
  int world;
  int root;
  uint64_t count;  // ABI count
  int peers[2];    // p2p patterns
};

// Fill this rank's send buffer (send_elems elements) before a checked iteration.
void fill_send(const CheckContext& c, void* send, uint64_t send_elems);
// Count the elements of this rank's receive buffer that differ from the expected result.
// Returns 0 for ranks that receive nothing for this op.
int64_t count_wrong(const CheckContext& c, const void* recv, uint64_t recv_elems);

}  // namespace commbench
