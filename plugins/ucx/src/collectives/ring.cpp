// The ring as a pipeline. Each block is cut into S segments, and every (round, segment) pair is
// one event on the receiving side: wait for that segment, reduce it into place, and pass it on
// at once, while the next segments of this round are already on their way. A rank therefore
// never waits for a whole block before forwarding, and the incoming data lands in a few
// segment-sized slots that stay in cache for the reduction (the unpipelined ring received whole
// blocks into a buffer the size of a block, and reduced from memory).
//
// Event t = round * S + segment (the allgather's rounds follow the reduce-scatter's); a message
// carries the step of the event that receives it, so every step of one collective is distinct
// between a pair as long as S * rounds <= 4096 (the tags' 12 bits), which segments_for() keeps.
//
// Buffer reuse, which UCX does not forgive (a send's buffer is read until the send completes):
//  - a slot is reused by the receive kWindow events later, after its data was reduced;
//  - the allreduce keeps its partials in the output buffer, block by block: the allgather later
//    receives the final block into the very place the reduce-scatter sent that block's partial
//    (or, in place, its input) from, so that receive is posted only after that send completed;
//  - the reduce-scatter's partials alternate between two buffers: a segment's partial is written
//    again two rounds later, after the send of the one before it completed.
#include "ring.h"

#include <algorithm>
#include <limits>

#include "blocks.h"
#include "commbench/sdk/dtypes.hpp"
#include "commbench/sdk/host_reduce.hpp"
#include "commbench/sdk/plugin_error.hpp"

namespace commbench::ucx_backend {
namespace {

using detail::at;
using detail::Block;
using detail::wrap;
using Ticket = Channel::Ticket;

// Receives in flight ahead of the one being reduced: while this rank reduces a segment, UCX has
// already matched the next ones, and their data moves as soon as progress runs.
constexpr size_t kWindow = 3;
constexpr size_t kStepSpace = 4096;
constexpr size_t kMaxSegments = 64;
// Send tickets that are no transfer: nothing to send (an empty segment), or not posted yet.
constexpr Ticket kEmpty = std::numeric_limits<Ticket>::max();
constexpr Ticket kNotYet = kEmpty - 1;

// The ring's geometry: block i of the op's index space (any function of i, in elements), cut
// into `segments` segments as equal as possible. Both neighbours compute the same lengths, so an
// empty segment is skipped on both sides.
template <class Blocks>
struct Ring {
  int n, r, next, prev;
  size_t segments;
  size_t es;
  Blocks blocks;

  Block segment(int block, size_t j) const {
    const Block b = blocks(wrap(block, n));
    const Block s = detail::even_block(b.length, static_cast<int>(segments), static_cast<int>(j));
    return {b.offset + s.offset, s.length};
  }
  size_t largest_segment() const {
    size_t m = 0;
    for (int i = 0; i < n; ++i) m = std::max(m, segment(i, 0).length);  // segment 0 is the longest
    return m;
  }
};

// Enough segments for ~segment_bytes each, within the step space (phases * (n-1) rounds).
template <class Blocks>
Ring<Blocks> make_ring(const Channel& ch, Blocks blocks, size_t es, size_t segment_bytes, int phases) {
  const int n = ch.size(), r = ch.rank();
  size_t largest = 0;
  for (int i = 0; i < n; ++i) largest = std::max(largest, blocks(i).length * es);
  const size_t wanted = segment_bytes == 0 ? 1 : (largest + segment_bytes - 1) / segment_bytes;
  const size_t rounds = static_cast<size_t>(phases) * static_cast<size_t>(n - 1);
  const size_t room = std::max<size_t>(1, kStepSpace / std::max<size_t>(1, rounds));
  const size_t segments = std::clamp<size_t>(wanted, 1, std::min(kMaxSegments, room));
  return Ring<Blocks>{n, r, wrap(r + 1, n), wrap(r - 1, n), segments, es, blocks};
}

struct RingOp {
  bool reduce;      // the reduce-scatter phase: block r of all inputs, reduced
  bool gather;      // the allgather phase: every block into `out`, at its offset
  const void* in;   // reduce: every block's input; gather alone: the own block
  void* out;        // gather: the whole output; reduce alone: unused (see Partial and Result)
  cb_dtype dtype;
  cb_redop redop;
  bool partials_reused;  // Partial(k) and Partial(k+2) are the same memory (see the top)
};

// Runs the phases of `op`. Partial(k, block, j): where round k's reduction of segment j of
// `block` goes (rounds before the last); Result(j): where segment j of block r's final
// reduction goes.
template <class Blocks, class Partial, class Result>
void pipeline(Channel& ch, const Ring<Blocks>& g, const RingOp& op, Partial partial, Result result, Scratch& s) {
  const int n = g.n, r = g.r;
  const size_t S = g.segments, es = g.es;
  const size_t rs_rounds = op.reduce ? static_cast<size_t>(n - 1) : 0;
  const size_t ag_rounds = op.gather ? static_cast<size_t>(n - 1) : 0;
  const size_t rs_events = rs_rounds * S, total = rs_events + ag_rounds * S;
  const size_t slot_bytes = g.largest_segment() * es;
  char* slots = op.reduce ? static_cast<char*>(s.a.get(kWindow * slot_bytes)) : nullptr;
  std::vector<Ticket>& sends = s.tickets;  // the reduce-scatter's, by event (round, segment)
  sends.assign(rs_events, kNotYet);
  Ticket recvs[kWindow];
  auto step = [](size_t event) { return static_cast<uint32_t>(event); };
  auto send = [&](size_t event, const void* buf, size_t elements) {
    return elements > 0 ? ch.post_send(g.next, step(event), buf, elements * es) : kEmpty;
  };
  auto wait_send = [&](size_t event) {  // the reduce-scatter's send of event `event`
    if (sends[event] == kNotYet)
      sdk::fail(CB_ERR_INTERNAL, "ring pipeline: a buffer reused before its send was posted");
    if (sends[event] != kEmpty) ch.wait(sends[event]);
  };

  auto post_recv = [&](size_t t) {
    if (t >= total) return;
    Ticket ticket = kEmpty;
    if (t < rs_events) {
      const Block b = g.segment(r - static_cast<int>(t / S) - 2, t % S);
      if (b.length > 0) ticket = ch.post_recv(g.prev, step(t), slots + (t % kWindow) * slot_bytes, b.length * es);
    } else {
      const size_t k = (t - rs_events) / S, j = (t - rs_events) % S;
      const Block b = g.segment(r - static_cast<int>(k) - 1, j);
      if (b.length > 0) {
        // The reduce-scatter sent this block's partial (round 0: its input) from here in round k.
        if (k < rs_rounds) wait_send(k * S + j);
        ticket = ch.post_recv(g.prev, step(t), at(op.out, b.offset, es), b.length * es);
      }
    }
    recvs[t % kWindow] = ticket;
  };

  // Round 0 sends the own input: all of it is ready.
  const Block own = g.blocks(r);
  for (size_t j = 0; j < S; ++j) {
    if (op.reduce) {
      const Block b = g.segment(r - 1, j);
      sends[j] = send(j, at(op.in, b.offset, es), b.length);
    } else {
      const Block b = g.segment(r, j);  // `in` holds block r alone
      send(j, at(op.in, b.offset - own.offset, es), b.length);
    }
  }
  for (size_t t = 0; t < std::min(kWindow, total); ++t) post_recv(t);
  // Allgather out of place: the own block's copy runs while the peers read it from `in`.
  if (!op.reduce) detail::copy_bytes(at(op.out, own.offset, es), op.in, own.length * es);

  for (size_t t = 0; t < total; ++t) {
    if (recvs[t % kWindow] != kEmpty) ch.wait(recvs[t % kWindow]);
    if (t < rs_events) {
      const size_t k = t / S, j = t % S;
      const int block = r - static_cast<int>(k) - 2;
      const Block b = g.segment(block, j);
      const bool last = k + 1 == rs_rounds;  // then block == r (mod n): the final result
      void* dst = last ? result(j) : partial(k, block, j);
      if (b.length > 0) {
        if (op.partials_reused && !last && k >= 2) wait_send((k - 1) * S + j);
        // Incoming partial first, own input second, on every rank: one order per element.
        sdk::reduce(op.dtype, op.redop, dst, slots + (t % kWindow) * slot_bytes, at(op.in, b.offset, es), b.length);
        if (last && op.redop == CB_REDOP_AVG) sdk::reduce_finish_avg(op.dtype, dst, b.length, n);
      }
      if (!last) sends[t + S] = send(t + S, dst, b.length);
      else if (op.gather) send(rs_events + j, dst, b.length);
    } else {
      const size_t k = (t - rs_events) / S, j = (t - rs_events) % S;
      const Block b = g.segment(r - static_cast<int>(k) - 1, j);
      if (k + 1 < ag_rounds) send(t + S, at(op.out, b.offset, es), b.length);
    }
    post_recv(t + kWindow);
  }
  ch.wait_all();
}

}  // namespace

void ring_allreduce(Channel& ch, const CollectiveArgs& a, Scratch& s, size_t segment_bytes) {
  const int n = ch.size();
  const size_t es = sdk::dtype_size(a.dtype);
  if (n == 1) {
    detail::copy_bytes(a.recvbuf, a.sendbuf, a.count * es);
    return;
  }
  const auto g = make_ring(ch, [&](int i) { return detail::even_block(a.count, n, i); }, es, segment_bytes, 2);
  // The partials live in the output, block by block: no scratch, no copy of the input.
  auto in_out = [&](size_t, int block, size_t j) { return at(a.recvbuf, g.segment(block, j).offset, es); };
  auto result = [&](size_t j) { return at(a.recvbuf, g.segment(ch.rank(), j).offset, es); };
  pipeline(ch, g, RingOp{true, true, a.sendbuf, a.recvbuf, a.dtype, a.redop, false}, in_out, result, s);
}

void ring_allgather(Channel& ch, const CollectiveArgs& a, Scratch& s, size_t segment_bytes) {
  const size_t es = sdk::dtype_size(a.dtype);
  // In place the own block is already at recvbuf + rank*count.
  void* own = at(a.recvbuf, static_cast<size_t>(ch.rank()) * a.count, es);
  if (ch.size() == 1) {
    detail::copy_bytes(own, a.sendbuf, a.count * es);
    return;
  }
  const auto g = make_ring(ch, [&](int i) { return detail::fixed_block(a.count, i); }, es, segment_bytes, 1);
  auto unused = [](auto...) -> void* { return nullptr; };
  pipeline(ch, g, RingOp{false, true, a.sendbuf, a.recvbuf, a.dtype, a.redop, false}, unused, unused, s);
}

void ring_reducescatter(Channel& ch, const CollectiveArgs& a, Scratch& s, size_t segment_bytes) {
  const int n = ch.size();
  const size_t es = sdk::dtype_size(a.dtype), block = a.count * es;
  if (n == 1) {
    detail::copy_bytes(a.recvbuf, a.sendbuf, block);
    return;
  }
  const auto g = make_ring(ch, [&](int i) { return detail::fixed_block(a.count, i); }, es, segment_bytes, 1);
  // The input is only read (out of place it must stay intact; in place only block r is output),
  // so the partials go to two scratch buffers of one block, alternating by round.
  char* partials[2] = {static_cast<char*>(s.b.get(block)), static_cast<char*>(s.c.get(block))};
  auto partial = [&](size_t k, int block_index, size_t j) {
    const Block seg = g.segment(block_index, j);
    return partials[k % 2] + (seg.offset % a.count) * es;  // the segment's place within its block
  };
  auto result = [&](size_t j) { return at(a.recvbuf, g.segment(ch.rank(), j).offset % a.count, es); };
  pipeline(ch, g, RingOp{true, false, a.sendbuf, nullptr, a.dtype, a.redop, true}, partial, result, s);
}

}  // namespace commbench::ucx_backend
