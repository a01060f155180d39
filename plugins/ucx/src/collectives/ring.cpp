// Every round posts its receive and its send before waiting: a send that waits for its
// matching receive (UCX rendezvous) would deadlock a ring of blocking sends.
#include "ring.h"

#include <algorithm>

#include "blocks.h"
#include "commbench/sdk/dtypes.hpp"

namespace commbench::ucx_backend {
namespace {

using detail::at;
using detail::Block;
using detail::wrap;

// Ring reduce-scatter over blocks(0..n-1) of `in`: after n-1 rounds this rank holds the full
// reduction of block `rank`, written to `out`. Partials travel rank -> rank+1 through scratch,
// so `in` is only read; `out` may alias block `rank` of `in` (in place), which the very last
// reduction is the only one to read. Rounds use steps first_step .. first_step+n-2.
template <class Blocks>
void reduce_scatter_blocks(Channel& ch, const void* in, void* out, Blocks blocks, cb_dtype dtype,
                           cb_redop redop, Scratch& s, uint32_t first_step) {
  const int n = ch.size(), r = ch.rank();
  const size_t es = sdk::dtype_size(dtype);
  if (n == 1) {
    detail::copy_bytes(out, in, blocks(0).length * es);
    return;
  }
  const int next = wrap(r + 1, n), prev = wrap(r - 1, n);
  size_t largest = 0;
  for (int i = 0; i < n; ++i) largest = std::max(largest, blocks(i).length);
  // Two buffers: a round sends the partial it computed last round while receiving the next.
  char* incoming = static_cast<char*>(s.a.get(largest * es));
  char* outgoing = static_cast<char*>(s.b.get(largest * es));
  for (int round = 0; round < n - 1; ++round) {
    // Send the partial of block r-round-1 (the own input in round 0); receive block r-round-2's.
    const Block sb = blocks(wrap(r - round - 1, n));
    const Block rb = blocks(wrap(r - round - 2, n));
    const uint32_t step = first_step + static_cast<uint32_t>(round);
    // Both neighbours compute the same block sizes, so an empty block is skipped on both sides.
    if (sb.length > 0) ch.post_send(next, step, round == 0 ? at(in, sb.offset, es) : outgoing, sb.length * es);
    if (rb.length > 0) ch.post_recv(prev, step, incoming, rb.length * es);
    ch.wait_all();
    // Add the own contribution; in the last round rb is block r and the result is final.
    void* dst = round == n - 2 ? out : outgoing;
    sdk::reduce(dtype, redop, dst, incoming, at(in, rb.offset, es), rb.length);
  }
}

// Ring allgather in place over `buf`, whose block `rank` is already there.
template <class Blocks>
void allgather_blocks(Channel& ch, void* buf, Blocks blocks, size_t es, uint32_t first_step) {
  const int n = ch.size(), r = ch.rank();
  const int next = wrap(r + 1, n), prev = wrap(r - 1, n);
  for (int round = 0; round < n - 1; ++round) {
    // Forward the block received last round (the own one in round 0).
    const Block sb = blocks(wrap(r - round, n));
    const Block rb = blocks(wrap(r - round - 1, n));
    const uint32_t step = first_step + static_cast<uint32_t>(round);
    if (sb.length > 0) ch.post_send(next, step, at(buf, sb.offset, es), sb.length * es);
    if (rb.length > 0) ch.post_recv(prev, step, at(buf, rb.offset, es), rb.length * es);
    ch.wait_all();
  }
}

}  // namespace

void ring_allreduce(Channel& ch, const CollectiveArgs& a, Scratch& s) {
  const int n = ch.size();
  const size_t es = sdk::dtype_size(a.dtype);
  auto blocks = [&](int i) { return detail::even_block(a.count, n, i); };
  const Block mine = blocks(ch.rank());
  void* own = at(a.recvbuf, mine.offset, es);
  reduce_scatter_blocks(ch, a.sendbuf, own, blocks, a.dtype, a.redop, s, 0);
  // Each rank divides its own block once; the allgather then spreads final values.
  if (a.redop == CB_REDOP_AVG) sdk::reduce_finish_avg(a.dtype, own, mine.length, n);
  allgather_blocks(ch, a.recvbuf, blocks, es, static_cast<uint32_t>(n));
}

void ring_allgather(Channel& ch, const CollectiveArgs& a) {
  const size_t es = sdk::dtype_size(a.dtype);
  // In place the own block is already at recvbuf + rank*count.
  detail::copy_bytes(at(a.recvbuf, static_cast<size_t>(ch.rank()) * a.count, es), a.sendbuf, a.count * es);
  allgather_blocks(ch, a.recvbuf, [&](int i) { return detail::fixed_block(a.count, i); }, es, 0);
}

void ring_reducescatter(Channel& ch, const CollectiveArgs& a, Scratch& s) {
  reduce_scatter_blocks(ch, a.sendbuf, a.recvbuf, [&](int i) { return detail::fixed_block(a.count, i); },
                        a.dtype, a.redop, s, 0);
  if (a.redop == CB_REDOP_AVG) sdk::reduce_finish_avg(a.dtype, a.recvbuf, a.count, ch.size());
}

}  // namespace commbench::ucx_backend
