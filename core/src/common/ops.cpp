#include "common/ops.h"

#include <array>

namespace commbench {
namespace {

using W = PerWorld;
using B = BusFactor;

// algbw and busbw follow nccl-tests (docs/metrics.md): allgather, reducescatter, alltoall,
// gather and scatter count the n blocks a rank ends up with or starts from; bidir_bw and
// msg_rate report the aggregate, as osu_bibw and osu_mbw_mr do.
constexpr std::array<OpInfo, 15> kOps{{
    //  kind                 name             abi op            red    root   p2p   minN inplace send      recv      algbw     busbw     messages
    {OpKind::Allreduce,     "allreduce",     CB_OP_ALLREDUCE,     true,  false, false, 1, true,  W::One,   W::One,   W::One,   B::Ring,  W::Zero},
    {OpKind::Allgather,     "allgather",     CB_OP_ALLGATHER,     false, false, false, 1, true,  W::One,   W::World, W::World, B::Block, W::Zero},
    {OpKind::Reducescatter, "reducescatter", CB_OP_REDUCESCATTER, true,  false, false, 1, true,  W::World, W::One,   W::World, B::Block, W::Zero},
    {OpKind::Broadcast,     "broadcast",     CB_OP_BROADCAST,     false, true,  false, 1, true,  W::One,   W::One,   W::One,   B::One,   W::Zero},
    {OpKind::Reduce,        "reduce",        CB_OP_REDUCE,        true,  true,  false, 1, true,  W::One,   W::One,   W::One,   B::One,   W::Zero},
    {OpKind::Alltoall,      "alltoall",      CB_OP_ALLTOALL,      false, false, false, 1, false, W::World, W::World, W::World, B::Block, W::Zero},
    {OpKind::Gather,        "gather",        CB_OP_GATHER,        false, true,  false, 1, true,  W::One,   W::World, W::World, B::Block, W::Zero},
    {OpKind::Scatter,       "scatter",       CB_OP_SCATTER,       false, true,  false, 1, true,  W::World, W::One,   W::World, B::Block, W::Zero},
    {OpKind::Barrier,       "barrier",       CB_OP_BARRIER,       false, false, false, 1, false, W::Zero,  W::Zero,  W::Zero,  B::Zero,  W::Zero},
    {OpKind::PingPong,      "pingpong",      CB_OP_SEND,          false, false, true,  2, false, W::One,   W::One,   W::One,   B::One,   W::Zero},
    {OpKind::UnidirBw,      "unidir_bw",     CB_OP_SEND,          false, false, true,  2, false, W::One,   W::One,   W::One,   B::One,   W::One},
    {OpKind::SendRecvRing,  "sendrecv",      CB_OP_SEND,          false, false, true,  2, false, W::One,   W::One,   W::One,   B::One,   W::Zero},
    {OpKind::BidirBw,       "bidir_bw",      CB_OP_SEND,          false, false, true,  2, false, W::One,   W::One,   W::Two,   B::One,   W::Two},
    {OpKind::MsgRate,       "msg_rate",      CB_OP_SEND,          false, false, true,  2, false, W::One,   W::One,   W::Pairs, B::One,   W::Pairs},
    {OpKind::AllPairs,      "all_pairs",     CB_OP_SEND,          false, false, true,  2, false, W::One,   W::One,   W::One,   B::One,   W::Zero},
}};

}  // namespace

double per_world(PerWorld m, int world) {
  switch (m) {
    case PerWorld::Zero: return 0;
    case PerWorld::One: return 1;
    case PerWorld::World: return world > 0 ? world : 0;
    case PerWorld::Two: return 2;
    case PerWorld::Pairs: return msg_rate_pairs(world);
  }
  return 0;
}

double bus_factor(BusFactor f, int world) {
  if (world <= 0) return 0;
  const double n = world;
  switch (f) {
    case BusFactor::Zero: return 0;
    case BusFactor::One: return 1;
    case BusFactor::Ring: return 2.0 * (n - 1.0) / n;
    case BusFactor::Block: return (n - 1.0) / n;
  }
  return 0;
}

std::span<const OpInfo> all_ops() { return kOps; }

const OpInfo& op_info(OpKind kind) {
  for (const auto& o : kOps)
    if (o.kind == kind) return o;
  return kOps[0];
}

std::optional<OpKind> parse_op_kind(std::string_view name) {
  for (const auto& o : kOps)
    if (o.name == name) return o.kind;
  return std::nullopt;
}

bool between_two_peers(OpKind kind) {
  return kind == OpKind::PingPong || kind == OpKind::UnidirBw || kind == OpKind::BidirBw;
}

bool uses_window(OpKind kind) { return op_info(kind).messages != PerWorld::Zero; }

uint64_t strong_scaling_share(OpKind op, int world) {
  // sendrecv's bandwidth is per rank (algbw: one message), but every rank sends one: the job
  // moves N of them, so a fixed total is N shares (a perfect ring then scores 100 %, not 2/N).
  if (op == OpKind::SendRecvRing) return world > 0 ? static_cast<uint64_t>(world) : 1;
  const double share = per_world(op_info(op).algbw, world);
  return share >= 1 ? static_cast<uint64_t>(share) : 1;
}

uint64_t send_elements(OpKind op, uint64_t count, int world) {
  return count * static_cast<uint64_t>(per_world(op_info(op).send, world));
}

uint64_t recv_elements(OpKind op, uint64_t count, int world) {
  return count * static_cast<uint64_t>(per_world(op_info(op).recv, world));
}

}  // namespace commbench
