// Recursive halving (reduce-scatter) and recursive doubling (allgather) over the power-of-two
// core of the world (fold.h). Step k pairs virtual rank v with v ^ 2^k: in the halving each rank
// keeps one half of its current range of blocks, sends the other half to its partner and reduces
// the partner's copy of the kept half into it, so after log2(pof2) steps each virtual rank holds
// one fully reduced block; the doubling swaps ranges of doubling size until every rank has all.
// Each step waits for all its transfers (lock-step), so no buffer is reused while sent.
#include "halving_doubling.h"

#include "blocks.h"
#include "commbench/sdk/dtypes.hpp"
#include "commbench/sdk/host_reduce.hpp"
#include "fold.h"

namespace commbench::ucx_backend {
namespace {

using detail::at;
using detail::Block;

// A run of virtual blocks [first, first + count) as one element range (virtual blocks are
// contiguous and in order).
template <class VBlocks>
Block span(const VBlocks& vblock, int first, int count) {
  const Block a = vblock(first), b = vblock(first + count - 1);
  return {a.offset, b.offset + b.length - a.offset};
}

// The halving on the virtual ranks: on entry `src` holds this rank's whole input (or its fold
// with its partner's), on return `acc` holds the reduction of vblock(v) at its offset (where
// the last step's reduction goes is up to last_dst(range): it returns the destination of each
// element range, see the reduce-scatter). Steps 1..log2(pof2).
template <class VBlocks, class LastDst>
void halve(Channel& ch, const detail::Fold& f, const VBlocks& vblock, const CollectiveArgs& a, const void* src,
           void* acc, void* tmp, LastDst last_dst) {
  const int v = f.vrank(ch.rank());
  const size_t es = sdk::dtype_size(a.dtype);
  int lo = 0;
  uint32_t step = 1;
  for (int mask = f.pof2 / 2; mask >= 1; mask /= 2, ++step) {
    const int vpeer = v ^ mask, peer = f.real(vpeer);
    const bool upper = (v & mask) != 0;
    const int keep_lo = upper ? lo + mask : lo, give_lo = upper ? lo : lo + mask;
    const Block keep = span(vblock, keep_lo, mask), give = span(vblock, give_lo, mask);
    if (give.length > 0) ch.post_send(peer, step, at(src, give.offset, es), give.length * es);
    if (keep.length > 0) ch.post_recv(peer, step, tmp, keep.length * es);
    ch.wait_all();
    // The lower virtual rank's data first on both sides: one order per element everywhere.
    auto reduce = [&](void* dst, size_t offset, size_t length) {
      const void* mine = at(src, offset, es);
      const void* theirs = static_cast<const char*>(tmp) + (offset - keep.offset) * es;
      if (vpeer < v) sdk::reduce(a.dtype, a.redop, dst, theirs, mine, length);
      else sdk::reduce(a.dtype, a.redop, dst, mine, theirs, length);
    };
    if (mask > 1) reduce(at(acc, keep.offset, es), keep.offset, keep.length);
    else last_dst(keep, reduce);
    src = acc;
    lo = keep_lo;
  }
}

// The doubling: every virtual rank holds vblock(v) of `buf` and gets all the others in place.
template <class VBlocks>
void double_up(Channel& ch, const detail::Fold& f, const VBlocks& vblock, void* buf, size_t es, uint32_t step) {
  const int v = f.vrank(ch.rank());
  for (int mask = 1; mask < f.pof2; mask <<= 1, ++step) {
    const int vpeer = v ^ mask, peer = f.real(vpeer);
    const Block mine = span(vblock, v & ~(mask - 1), mask), theirs = span(vblock, vpeer & ~(mask - 1), mask);
    if (mine.length > 0) ch.post_send(peer, step, at(buf, mine.offset, es), mine.length * es);
    if (theirs.length > 0) ch.post_recv(peer, step, at(buf, theirs.offset, es), theirs.length * es);
    ch.wait_all();
  }
}

uint32_t log2_of(int pof2) {
  uint32_t k = 0;
  while ((1 << k) < pof2) ++k;
  return k;
}

}  // namespace

void rabenseifner_allreduce(Channel& ch, const CollectiveArgs& a, Scratch& s) {
  const int n = ch.size(), r = ch.rank();
  const size_t es = sdk::dtype_size(a.dtype), bytes = a.count * es;
  if (n == 1) {
    detail::copy_bytes(a.recvbuf, a.sendbuf, bytes);
    return;
  }
  const detail::Fold f(n);
  const uint32_t unfold_step = 2 * log2_of(f.pof2) + 1;
  if (f.sits_out(r)) {
    ch.post_send(r - 1, 0, a.sendbuf, bytes);
    ch.wait_all();  // in place the result lands where the input was sent from: not before
    ch.post_recv(r - 1, unfold_step, a.recvbuf, bytes);
    ch.wait_all();
    return;
  }
  void* tmp = s.a.get(bytes);  // the fold's whole buffer, or at most half of it per step
  const void* src = a.sendbuf;
  if (f.takes_partner(r)) {
    ch.post_recv(r + 1, 0, tmp, bytes);
    ch.wait_all();
    sdk::reduce(a.dtype, a.redop, a.recvbuf, a.sendbuf, tmp, a.count);  // lower rank first
    src = a.recvbuf;
  }
  // The partials accumulate in the output, the input is only read: no copy of it.
  auto vblock = [&](int v) { return detail::even_block(a.count, f.pof2, v); };
  auto into_output = [&](Block keep, auto&& reduce) { reduce(at(a.recvbuf, keep.offset, es), keep.offset, keep.length); };
  halve(ch, f, vblock, a, src, a.recvbuf, tmp, into_output);
  // Each rank divides its own block once; the doubling spreads final values.
  const Block own = vblock(f.vrank(r));
  if (a.redop == CB_REDOP_AVG) sdk::reduce_finish_avg(a.dtype, at(a.recvbuf, own.offset, es), own.length, n);
  double_up(ch, f, vblock, a.recvbuf, es, log2_of(f.pof2) + 1);
  if (f.takes_partner(r)) {
    ch.post_send(r + 1, unfold_step, a.recvbuf, bytes);
    ch.wait_all();
  }
}

void recursive_halving_reducescatter(Channel& ch, const CollectiveArgs& a, Scratch& s) {
  const int n = ch.size(), r = ch.rank();
  const size_t es = sdk::dtype_size(a.dtype), block = a.count * es, total = block * static_cast<size_t>(n);
  const detail::Fold f(n);
  const uint32_t unfold_step = log2_of(f.pof2) + 1;
  if (n == 1) {
    detail::copy_bytes(a.recvbuf, a.sendbuf, block);
    return;
  }
  if (f.sits_out(r)) {
    ch.post_send(r - 1, 0, a.sendbuf, total);
    ch.wait_all();  // in place the result lands inside the input just sent
    ch.post_recv(r - 1, unfold_step, a.recvbuf, block);
    ch.wait_all();
  } else {
    // Virtual rank v speaks for ranks real(v) .. real(v) + members(v) - 1: their blocks.
    auto vblock = [&](int v) {
      return Block{static_cast<size_t>(f.real(v)) * a.count, static_cast<size_t>(f.members(v)) * a.count};
    };
    // The partials go to scratch: out of place the input must stay intact, and in place only
    // block r is output.
    char* acc = static_cast<char*>(s.b.get(total));
    void* tmp = s.a.get(total);
    const void* src = a.sendbuf;
    if (f.takes_partner(r)) {
      ch.post_recv(r + 1, 0, tmp, total);
      ch.wait_all();
      sdk::reduce(a.dtype, a.redop, acc, a.sendbuf, tmp, a.count * static_cast<size_t>(n));
      src = acc;
    }
    // The last step reduces this rank's block straight into recvbuf; the folded partner's block
    // (if any) into acc, to be sent.
    const size_t own = static_cast<size_t>(r) * a.count;
    auto last = [&](Block keep, auto&& reduce) {
      reduce(a.recvbuf, own, a.count);
      if (keep.length > a.count) reduce(at(acc, own + a.count, es), own + a.count, a.count);
    };
    halve(ch, f, vblock, a, src, acc, tmp, last);
    if (f.takes_partner(r)) {
      ch.post_send(r + 1, unfold_step, at(acc, own + a.count, es), block);
      ch.wait_all();
    }
  }
  // Each rank divides its own block.
  if (a.redop == CB_REDOP_AVG) sdk::reduce_finish_avg(a.dtype, a.recvbuf, a.count, n);
}

}  // namespace commbench::ucx_backend
