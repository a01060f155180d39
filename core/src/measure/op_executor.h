// Executes one iteration of a case: a single collective post, or the send/recv choreography of a
// point-to-point pattern. Owns nothing; buffers come from the case runner.
#pragma once

#include <cstdint>
#include <vector>

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
};

}  // namespace commbench
