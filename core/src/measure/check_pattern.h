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
#include <string>
#include <string_view>

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
  // Which set of inputs: checks of one case after the first use other values (the benchmark's
  // check after timing, conformance's second call), so a backend that returns a result cached
  // from an earlier call with the same buffers fails. 0 is the first.
  uint32_t generation = 0;
};

// Where a mismatch is: in the receive buffer (the checks below); in the guard bytes just past the
// end of a buffer the backend was handed (it wrote beyond the count it was given) or just before
// its start; or in an out-of-place send buffer, which must come back unchanged (the ABI's send
// buffers are read-only).
enum class CheckedBuffer : int32_t {
  kRecv = 0, kPastRecvEnd = 1, kSend = 2, kPastSendEnd = 3, kBeforeRecvStart = 4, kBeforeSendStart = 5
};
// "recv", "past_recv_end", "send", "past_send_end", "before_recv_start", "before_send_start"
// (first_wrong.buffer, docs/output.md).
std::string_view checked_buffer_name(CheckedBuffer b);
// The guard of a buffer: "wrote past the end of its receive buffer, element 3 after it" (for a
// mismatch in the guard bytes; "" for kRecv and kSend). `whose` is "its" or "the".
std::string outside_text(std::string_view buffer_name, uint64_t index, std::string_view whose);

// The first element of a buffer that differs from what the check expects.
struct Mismatch {
  uint64_t index = 0;  // element of the buffer (ABI layout, in elements; in a guard: away from the buffer)
  double expected = 0; // NaN when the element had to be left untouched (the poison, a guard, the input)
  double got = 0;      // NaN when the element still holds the poison (nothing was written)
  CheckedBuffer buffer = CheckedBuffer::kRecv;
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

// Guard bytes before and after a buffer: written before the op with a pattern that varies with the
// offset and the check's generation; afterwards every element-sized chunk that changed is one
// wrong element (`which` says beside which buffer; `got` is the first changed byte; `index` counts
// elements away from the buffer, 0 being the one next to it). Consecutive generations differ at
// every byte, so a stray write of any fixed value shows in one of a case's two checks.
inline constexpr size_t kGuardBytes = 4096;
void fill_guard(void* guard, size_t bytes, uint32_t generation);
CheckResult check_guard(const void* guard, size_t bytes, size_t elem_size, CheckedBuffer which, uint32_t generation);

// An out-of-place send buffer after the op: it must still hold what fill_send wrote.
CheckResult check_send_unchanged(const CheckContext& c, const void* send, uint64_t send_elems);

// Adds `more` to `total`: counts summed, the first mismatch kept.
void merge_check(CheckResult& total, const CheckResult& more);

}  // namespace commbench
