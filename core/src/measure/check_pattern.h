// The result check (docs/metrics.md, "Correctness checks"), nccl-tests' method made stricter:
//  - reductions: per-element inputs from a hash of (rank, index) whose result is exact in every
//    reduction order for every dtype and world size (few "active" ranks per element, values
//    bounded so that any partial sum or product stays exactly representable); `avg` on floating
//    types within the rounding a pre-multiplying backend may add, integers truncated;
//  - data movement: every element a hash of (source rank, destination block, index), compared
//    bit for bit, so a misrouted or shifted block cannot match;
//  - receive buffers are poisoned first (NaN for floats, the integer no pattern produces), so a
//    backend that writes nothing is caught, and root-only outputs on other ranks must still hold
//    what was there before the op.
// Pure functions on host memory: CaseBuffers moves device data through host copies, and the
// conformance suite can call these on any buffers it likes.
#pragma once

#include <cstdint>
#include <optional>

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
  bool in_place = false;  // the ABI's in-place layout (what a non-root's buffer holds before the op)
};

// The first element of a receive buffer that differs from what the check expects.
struct Mismatch {
  uint64_t index = 0;  // element of the receive buffer (ABI layout, in elements)
  double expected = 0; // NaN when the element had to be left untouched (it held the poison)
  double got = 0;      // NaN when the element still holds the poison (nothing was written)
};

struct CheckResult {
  int64_t wrong = 0;  // mismatched elements
  std::optional<Mismatch> first;
};

// Before a checked iteration, in this order: poison the receive buffer (recv_elems elements),
// then fill the send buffer (send_elems elements). In place, the send region lies inside the
// receive buffer (or the reverse) and must end up holding the input.
void poison_recv(const CheckContext& c, void* recv, uint64_t recv_elems);
void fill_send(const CheckContext& c, void* send, uint64_t send_elems);

// After it: compares this rank's whole receive buffer with what it must hold. Ranks that get no
// output (reduce/gather off the root, p2p bystanders) must still hold what they held before.
CheckResult check_recv(const CheckContext& c, const void* recv, uint64_t recv_elems);
inline int64_t count_wrong(const CheckContext& c, const void* recv, uint64_t recv_elems) {
  return check_recv(c, recv, recv_elems).wrong;
}

}  // namespace commbench
