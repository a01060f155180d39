#include "stats/bandwidth.h"

namespace commbench {

// The factors live in the op table (common/ops.cpp), which follows nccl-tests so users can
// compare numbers directly. `bytes` is always the per-rank message size (count * dtype size).

double algbw_bytes(OpKind op, uint64_t bytes, int world) {
  return static_cast<double>(bytes) * per_world(op_info(op).algbw, world);
}

// nccl-tests prints the total where the op moves one block per rank (algbw = n x bytes): those
// ops' size column is the same n x bytes; every other op's is the per-rank size.
uint64_t nccl_tests_bytes(OpKind op, uint64_t bytes, int world) {
  if (op_info(op).algbw != PerWorld::World) return bytes;
  const uint64_t n = world > 0 ? static_cast<uint64_t>(world) : 0;
  return n != 0 && bytes > UINT64_MAX / n ? UINT64_MAX : bytes * n;
}

double busbw_factor(OpKind op, int world) { return bus_factor(op_info(op).busbw, world); }

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

double messages_per_time(OpKind op, int world) { return per_world(op_info(op).messages, world); }

double message_rate_mps(OpKind op, int world, double time_us) {
  if (!(time_us > 0)) return 0;
  return messages_per_time(op, world) / time_us;  // messages per microsecond = millions per second
}

}  // namespace commbench
