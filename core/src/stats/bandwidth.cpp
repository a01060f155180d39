#include "stats/bandwidth.h"

namespace commbench {

// The table in docs/metrics.md, which follows nccl-tests so users can compare numbers directly.
// `bytes` is always the per-rank message size (count * dtype size).

double algbw_bytes(OpKind op, uint64_t bytes, int world) {
  const double b = static_cast<double>(bytes);
  const double n = world > 0 ? static_cast<double>(world) : 0.0;
  switch (op) {
    // Each rank ends up with (allgather) or starts from (reducescatter) n blocks of `bytes`;
    // alltoall, gather and scatter move n blocks too.
    case OpKind::Allgather:
    case OpKind::Reducescatter:
    case OpKind::Alltoall:
    case OpKind::Gather:
    case OpKind::Scatter:
      return b * n;
    case OpKind::Allreduce:
    case OpKind::Broadcast:
    case OpKind::Reduce:
    case OpKind::PingPong:
    case OpKind::UnidirBw:
    case OpKind::SendRecvRing:
    case OpKind::AllPairs:
      return b;
    // Both directions at once: the aggregate, as osu_bibw reports it.
    case OpKind::BidirBw:
      return 2.0 * b;
    // Every pair moves one message per message time: the aggregate, as osu_mbw_mr reports it.
    case OpKind::MsgRate:
      return b * msg_rate_pairs(world);
    case OpKind::Barrier:
      return 0;  // moves no payload
  }
  return 0;
}

uint64_t nccl_tests_bytes(OpKind op, uint64_t bytes, int world) {
  switch (op) {
    case OpKind::Allgather:
    case OpKind::Reducescatter:
    case OpKind::Alltoall:
    case OpKind::Gather:
    case OpKind::Scatter: {
      const uint64_t n = world > 0 ? static_cast<uint64_t>(world) : 0;
      return n != 0 && bytes > UINT64_MAX / n ? UINT64_MAX : bytes * n;
    }
    default:
      return bytes;
  }
}

double busbw_factor(OpKind op, int world) {
  if (world <= 0) return 0;
  const double n = static_cast<double>(world);
  switch (op) {
    // Ring allreduce: each rank sends and receives 2(n-1)/n of the buffer.
    case OpKind::Allreduce:
      return 2.0 * (n - 1.0) / n;
    // Each rank sends or receives (n-1) of the n blocks over its link.
    case OpKind::Allgather:
    case OpKind::Reducescatter:
    case OpKind::Alltoall:
    case OpKind::Gather:
    case OpKind::Scatter:
      return (n - 1.0) / n;
    // A pipelined chain moves the whole buffer over each link once.
    case OpKind::Broadcast:
    case OpKind::Reduce:
    // One message over one link.
    case OpKind::PingPong:
    case OpKind::UnidirBw:
    case OpKind::SendRecvRing:
    case OpKind::BidirBw:
    case OpKind::MsgRate:
    case OpKind::AllPairs:
      return 1.0;
    case OpKind::Barrier:
      return 0;
  }
  return 0;
}

Bandwidth bandwidth(OpKind op, uint64_t bytes, int world, double time_us) {
  Bandwidth bw;
  // A zero or negative time is a measurement that did not happen: report no bandwidth rather
  // than infinity, which JSON cannot hold.
  if (!(time_us > 0)) return bw;
  // bytes / (time_us * 1e-6 s) / 1e9 = bytes / time_us / 1e3
  bw.algbw_gbps = algbw_bytes(op, bytes, world) / time_us / 1e3;
  bw.busbw_gbps = bw.algbw_gbps * busbw_factor(op, world);
  return bw;
}

double messages_per_time(OpKind op, int world) {
  switch (op) {
    case OpKind::UnidirBw: return 1;
    case OpKind::BidirBw: return 2;
    case OpKind::MsgRate: return msg_rate_pairs(world);
    default: return 0;
  }
}

double message_rate_mps(OpKind op, int world, double time_us) {
  if (!(time_us > 0)) return 0;
  return messages_per_time(op, world) / time_us;  // messages per microsecond = millions per second
}

}  // namespace commbench
