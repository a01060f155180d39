#include "stats/bandwidth.h"

namespace commbench {

// The factors live in the op table (common/ops.cpp), which follows nccl-tests so users can
// compare numbers directly. `bytes` is always the per-rank message size (count * dtype size).

double algbw_bytes(OpKind op, uint64_t bytes, int world) {
  return static_cast<double>(bytes) * per_world(op_info(op).algbw, world);
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
