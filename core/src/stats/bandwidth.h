// algbw and busbw as nccl-tests defines them (docs/metrics.md).
#pragma once

#include <cstdint>

#include "common/ops.h"

namespace commbench {

// Bytes that algbw divides by time, given the per-rank message size `bytes` (count * dtype size)
// and `world` ranks: e.g. allreduce -> bytes, allgather -> bytes * world.
double algbw_bytes(OpKind op, uint64_t bytes, int world);
// The size column of nccl-tests for this op: n * bytes where nccl-tests prints the total
// (allgather, reducescatter, alltoall, gather, scatter), bytes otherwise. Saturates.
uint64_t nccl_tests_bytes(OpKind op, uint64_t bytes, int world);
// busbw = algbw * factor: allreduce 2(n-1)/n, allgather/reducescatter/alltoall/gather/scatter
// (n-1)/n, broadcast/reduce/p2p 1, barrier 0.
double busbw_factor(OpKind op, int world);

struct Bandwidth {
  double algbw_gbps = 0;  // decimal GB/s (1e9 bytes per second)
  double busbw_gbps = 0;
};
// time_us: the time of one operation (for p2p patterns: of one message).
Bandwidth bandwidth(OpKind op, uint64_t bytes, int world, double time_us);

// Messages delivered per unit of the pattern's time: unidir_bw 1, bidir_bw 2 (both
// directions), msg_rate one per pair; 0 for patterns that are not about message rate.
double messages_per_time(OpKind op, int world);
// Millions of messages per second for the windowed patterns, 0 for the others.
double message_rate_mps(OpKind op, int world, double time_us);

}  // namespace commbench
