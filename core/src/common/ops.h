// The workloads an experiment can name: every collective of the ABI plus the point-to-point
// patterns the core builds from send/recv. One table so parsing, planning and metrics agree.
#pragma once

#include <cstdint>
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

// A multiple of one rank's message (count elements, or bytes) that depends on the world size.
enum class PerWorld {
  Zero,   // nothing
  One,    // the message itself
  World,  // one message per rank: n x
  Two,    // both directions at once: 2 x
  Pairs,  // one per msg_rate pair: (n / 2) x
};
double per_world(PerWorld m, int world);

// busbw / algbw, as nccl-tests defines it (docs/metrics.md).
enum class BusFactor {
  Zero,   // moves no payload (barrier)
  One,    // the whole buffer over each link once (broadcast, reduce, chains, p2p)
  Ring,   // ring allreduce: 2(n-1)/n
  Block,  // (n-1) of n blocks over each link: (n-1)/n
};
double bus_factor(BusFactor f, int world);

// One row per op: everything parsing, planning, buffers, checks and metrics need to know.
// Adding an op is one row here plus its posts (measure/op_executor.cpp) and its expected values
// (measure/check_pattern.cpp): docs/architecture.md, "How to add an op".
struct OpInfo {
  OpKind kind;
  std::string_view name;     // as written in experiment files and outputs
  cb_op abi_op;              // the ABI op it posts (send for p2p patterns)
  bool reduction;            // takes a redop
  bool rooted;               // takes a root
  bool point_to_point;       // built on send/recv by the core
  int min_world_size;        // smallest world it makes sense for
  bool in_place;             // the ABI defines an in-place layout (cb_op_args)
  PerWorld send;             // send buffer: count x this elements
  PerWorld recv;             // receive buffer: count x this elements
  PerWorld algbw;            // bytes algbw divides by time: per-rank bytes x this
  BusFactor busbw;           // busbw = algbw x this
  PerWorld messages;         // messages delivered per pattern time (msg rate); Zero: not counted
};

std::span<const OpInfo> all_ops();
const OpInfo& op_info(OpKind kind);
std::optional<OpKind> parse_op_kind(std::string_view name);

// Patterns between the two ranks of `peers` (pingpong, unidir_bw, bidir_bw): the other ranks
// idle, so the world size changes nothing they measure and they have no scaling efficiency.
bool between_two_peers(OpKind kind);
// Patterns that keep `window` messages in flight (unidir_bw, bidir_bw, msg_rate): the ones that
// count messages.
bool uses_window(OpKind kind);

// Strong scaling (common/scaling_mode.h): the number of equal shares a job-wide size is
// divided into at `world` ranks, from the algbw multiple (allgather: world; allreduce: 1), except
// sendrecv, where every rank sends its own message: world.
uint64_t strong_scaling_share(OpKind op, int world);

// Elements of the send and receive buffers of one rank for `count` (the ABI's count).
uint64_t send_elements(OpKind op, uint64_t count, int world);
uint64_t recv_elements(OpKind op, uint64_t count, int world);

}  // namespace commbench
