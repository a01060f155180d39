// Which sends of a collective ask UCX to complete them fast (UCP_OP_ATTR_FLAG_FAST_CMPL). In UCX
// 1.13's protocol v1 (its default before 1.16) that sends a message eagerly, through the
// shared-memory queues, up to the "local" rendezvous threshold (UCX_RNDV_SEND_NBR_THRESH,
// 256 KiB, which also becomes the flagged sends' threshold above it), instead of by rendezvous;
// a rendezvous threshold set by the user applies to them too. Protocol v2 weighs the flag in its
// cost model instead (measured here: v1 only).
//
// Why: over shared memory UCX's rendezvous is one read of the sender's buffer by the receiver
// (CMA). When this rank has just written that buffer (an in-place allreduce sends what the last
// reduction wrote; a later round sends what this op reduced), the read pulls modified lines out of
// this core's cache, and the next reduction here writes lines the peer has just read. A 2-rank
// allreduce in place of 32-64 KiB took 1.5-1.7x the time that way (docs/performance-ucx-mpi.md).
// An input nobody rewrites (out of place) reads cheaply: sent eagerly it was 1.4x slower at 32 KiB.
// So the op's own input never goes eagerly, and only allreduce asks: reduce-scatter at 64 KiB
// was 1.5x slower eagerly (its in-place sends are input blocks this rank does not write).
#pragma once

#include <cstddef>
#include <functional>

#include "channel.h"
#include "commbench/backend.h"
#include "commbench/sdk/dtypes.hpp"

namespace commbench::ucx_backend {

struct EagerSends {
  size_t up_to = 0;             // bytes; 0: no send asks (UCX's own choice for every message)
  const char* input = nullptr;  // the op's input when out of place: never eager
  size_t input_bytes = 0;

  bool applies(const void* buf, size_t bytes) const {
    if (bytes == 0 || bytes > up_to) return false;
    // std::less: a total order on pointers into different objects.
    const char* p = static_cast<const char*>(buf);
    const std::less<const char*> before;
    const bool in_input = input != nullptr && !before(p, input) && before(p, input + input_bytes);
    return !in_input;
  }
};

// The policy of one collective: allreduce's sends up to `up_to` bytes, except those from its
// out-of-place input; nothing for the other ops.
inline EagerSends eager_sends_for(cb_op op, const CollectiveArgs& a, size_t up_to) {
  if (op != CB_OP_ALLREDUCE || up_to == 0) return {};
  EagerSends e;
  e.up_to = up_to;
  if (a.sendbuf != a.recvbuf) {
    e.input = static_cast<const char*>(a.sendbuf);
    e.input_bytes = a.count * sdk::dtype_size(a.dtype);
  }
  return e;
}

}  // namespace commbench::ucx_backend
