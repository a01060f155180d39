// The workloads an experiment can name: every collective of the ABI plus the point-to-point
// patterns the core builds from send/recv. One table so parsing, planning and metrics agree.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "commbench/backend.h"

namespace commbench {

enum class OpKind {
  Allreduce, Allgather, Reducescatter, Broadcast, Reduce, Alltoall, Gather, Scatter, Barrier,
  PingPong,      // two ranks, half round-trip latency
  UnidirBw,      // two ranks, `window` sends in flight, one ack per window
  SendRecvRing,  // every rank sends to rank+1 and receives from rank-1 at once
  BidirBw,       // two ranks, `window` messages in flight in each direction at once
  MsgRate,       // ranks paired (i, i+n/2), `window` sends per pair at once; messages per second
  AllPairs,      // every directed (src, dst) pair, one message at a time (measure/all_pairs.h)
};

// Pairs of msg_rate in a world of n ranks (an odd last rank sits out).
inline int msg_rate_pairs(int world) { return world / 2; }

struct OpInfo {
  OpKind kind;
  std::string_view name;     // as written in experiment files and outputs
  cb_op abi_op;              // the ABI op it posts (send for p2p patterns)
  bool reduction;            // takes a redop
  bool rooted;               // takes a root
  bool point_to_point;       // built on send/recv by the core
  int min_world_size;        // smallest world it makes sense for
};

std::span<const OpInfo> all_ops();
const OpInfo& op_info(OpKind kind);
std::optional<OpKind> parse_op_kind(std::string_view name);

}  // namespace commbench
