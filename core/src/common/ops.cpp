#include "common/ops.h"

#include <array>

namespace commbench {
namespace {
constexpr std::array<OpInfo, 15> kOps{{
    {OpKind::Allreduce, "allreduce", CB_OP_ALLREDUCE, true, false, false, 1},
    {OpKind::Allgather, "allgather", CB_OP_ALLGATHER, false, false, false, 1},
    {OpKind::Reducescatter, "reducescatter", CB_OP_REDUCESCATTER, true, false, false, 1},
    {OpKind::Broadcast, "broadcast", CB_OP_BROADCAST, false, true, false, 1},
    {OpKind::Reduce, "reduce", CB_OP_REDUCE, true, true, false, 1},
    {OpKind::Alltoall, "alltoall", CB_OP_ALLTOALL, false, false, false, 1},
    {OpKind::Gather, "gather", CB_OP_GATHER, false, true, false, 1},
    {OpKind::Scatter, "scatter", CB_OP_SCATTER, false, true, false, 1},
    {OpKind::Barrier, "barrier", CB_OP_BARRIER, false, false, false, 1},
    {OpKind::PingPong, "pingpong", CB_OP_SEND, false, false, true, 2},
    {OpKind::UnidirBw, "unidir_bw", CB_OP_SEND, false, false, true, 2},
    {OpKind::SendRecvRing, "sendrecv", CB_OP_SEND, false, false, true, 2},
    {OpKind::BidirBw, "bidir_bw", CB_OP_SEND, false, false, true, 2},
    {OpKind::MsgRate, "msg_rate", CB_OP_SEND, false, false, true, 2},
    {OpKind::AllPairs, "all_pairs", CB_OP_SEND, false, false, true, 2},
}};
}  // namespace

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

}  // namespace commbench
