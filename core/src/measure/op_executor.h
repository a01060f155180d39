// Executes one iteration of a case: a single collective post, or the send/recv choreography of a
// point-to-point pattern. Owns nothing; buffers come from the case runner.
#pragma once

#include <cstdint>
#include <vector>

#include "measure/host_timer.h"
#include "plan/plan.h"
#include "worker/backend_session.h"

namespace commbench {

struct OpBuffers {
  void* send = nullptr;
  void* recv = nullptr;
  void* ack = nullptr;  // 64-byte scratch for the unidir_bw window acknowledgement
};

class OpExecutor {
 public:
  OpExecutor(BackendSession& session, const Execution& exec, const CaseSpec& spec, int rank,
             const OpBuffers& buffers);
  // Runs one iteration; returns this rank's time for the quantity the pattern reports, in
  // microseconds (collectives: the op; pingpong: half the round trip; unidir_bw: per message).
  double run_once(int32_t timeout_ms);
  // Whether the case runner should synchronise all ranks before every timed iteration. Not
  // for pingpong: its round trips run back to back, as in osu_latency and ucx_perftest (the
  // responder is already waiting when the next ping leaves), and a barrier in between would
  // measure a cold path that no streaming exchange takes.
  bool barrier_each_iteration() const { return spec_.op != OpKind::PingPong; }
  // The ranks were just synchronised by someone else (a barrier): pingpong's next round trip
  // starts with its untimed synchronising exchange again.
  void resynchronise() { in_step_ = false; }

 private:
  // `window` sends to and/or receives from `peer` in flight at once, all completed; then, when
  // `ack_from_receiver`, the receiving side acknowledges with one byte so that the sender's
  // time covers delivery. Returns the elapsed time in microseconds.
  double windowed(int peer, bool send, bool recv, bool ack_from_receiver, int32_t timeout_ms);
  void wait_all(std::vector<cb_request*>& reqs, int32_t timeout_ms);
  double now_us() const;
  void post_and_wait(const cb_op_args& args, int32_t timeout_ms);
  cb_op_args base_args() const;

  BackendSession& session_;
  const Execution& exec_;
  const CaseSpec& spec_;
  int rank_;
  OpBuffers buf_;
  const HostTimer& timer_;
  bool in_step_ = false;  // pingpong: the peers already exchanged since the last barrier
};

}  // namespace commbench
