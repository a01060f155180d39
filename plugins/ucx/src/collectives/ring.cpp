// Ring algorithms: bandwidth-optimal, n-1 rounds per phase, each rank talking only to its two
// neighbours. Every round posts its receive and its send together.
#include "algorithms.h"

namespace commbench::ucx_backend::algorithms {
namespace {

// Ring reduce-scatter over blocks `blocks(i)` of the input `in`: after n-1 rounds rank r holds
// the full reduction of block r, written to `out` (out may alias block r of `in`: it is read
// for the last time by the very reduction that writes it). Partial sums travel r -> r+1, so the
// input is never modified; `s.a`/`s.b` carry the partials.
template <class Blocks>
void ring_reduce_scatter_blocks(Channel& ch, const void* in, void* out, Blocks blocks, size_t esize,
                                cb_dtype dtype, cb_redop redop, Scratch& s, uint32_t first_step) {
  const int n = ch.size(), r = ch.rank();
  const int next = mod(r + 1, n), prev = mod(r - 1, n);
  size_t largest = 0;
  for (int i = 0; i < n; ++i) largest = std::max(largest, blocks(i).length);
  char* incoming = static_cast<char*>(s.a.get(largest * esize));
  char* outgoing = static_cast<char*>(s.b.get(largest * esize));
  for (int step = 0; step < n - 1; ++step) {
    // Send the partial of block r-step-1 (own input at step 0), receive that of block r-step-2.
    const Block sb = blocks(mod(r - step - 1, n));
    const Block rb = blocks(mod(r - step - 2, n));
    const void* send = step == 0 ? at(in, sb.offset, esize) : outgoing;
    if (sb.length > 0) ch.post_send(next, first_step + static_cast<uint32_t>(step), send, sb.length * esize);
    if (rb.length > 0) ch.post_recv(prev, first_step + static_cast<uint32_t>(step), incoming, rb.length * esize);
    ch.wait_all();
    // Add this rank's contribution; the last round's result is the final block r.
    void* dst = step == n - 2 ? out : outgoing;
    sdk::reduce(dtype, redop, dst, incoming, at(in, rb.offset, esize), rb.length);
  }
  if (n == 1) copy_if_distinct(out, in, blocks(0).length * esize);
}

// Ring allgather in place over `buf` whose block r is already there.
template <class Blocks>
void ring_allgather_blocks(Channel& ch, void* buf, Blocks blocks, size_t esize, uint32_t first_step) {
  const int n = ch.size(), r = ch.rank();
  const int next = mod(r + 1, n), prev = mod(r - 1, n);
  for (int step = 0; step < n - 1; ++step) {
    const Block sb = blocks(mod(r - step, n));
    const Block rb = blocks(mod(r - step - 1, n));
    if (sb.length > 0) ch.post_send(next, first_step + static_cast<uint32_t>(step), at(buf, sb.offset, esize), sb.length * esize);
    if (rb.length > 0) ch.post_recv(prev, first_step + static_cast<uint32_t>(step), at(buf, rb.offset, esize), rb.length * esize);
    ch.wait_all();
  }
}

}  // namespace

void ring_allreduce(Channel& ch, const CollectiveArgs& a, Scratch& s) {
  const int n = ch.size(), r = ch.rank();
  const size_t es = sdk::dtype_size(a.dtype);
  auto blocks = [&](int i) { return block_of(a.count, n, i); };
  const Block mine = blocks(r);
  ring_reduce_scatter_blocks(ch, a.sendbuf, at(a.recvbuf, mine.offset, es), blocks, es, a.dtype,
                             a.redop, s, 0);
  if (a.redop == CB_REDOP_AVG) sdk::reduce_finish_avg(a.dtype, at(a.recvbuf, mine.offset, es), mine.length, n);
  ring_allgather_blocks(ch, a.recvbuf, blocks, es, static_cast<uint32_t>(n));
}

void ring_allgather(Channel& ch, const CollectiveArgs& a) {
  const int r = ch.rank();
  const size_t es = sdk::dtype_size(a.dtype);
  copy_if_distinct(at(a.recvbuf, static_cast<size_t>(r) * a.count, es), a.sendbuf, a.count * es);
  ring_allgather_blocks(ch, a.recvbuf, [&](int i) { return Block{static_cast<size_t>(i) * a.count, a.count}; },
                        es, 0);
}

void ring_reducescatter(Channel& ch, const CollectiveArgs& a, Scratch& s) {
  const int n = ch.size();
  const size_t es = sdk::dtype_size(a.dtype);
  ring_reduce_scatter_blocks(ch, a.sendbuf, a.recvbuf,
                             [&](int i) { return Block{static_cast<size_t>(i) * a.count, a.count}; },
                             es, a.dtype, a.redop, s, 0);
  if (a.redop == CB_REDOP_AVG) sdk::reduce_finish_avg(a.dtype, a.recvbuf, a.count, n);
}

}  // namespace commbench::ucx_backend::algorithms
