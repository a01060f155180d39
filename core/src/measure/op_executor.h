// Executes one iteration of a case: a single collective post, or the send/recv choreography of a
// point-to-point pattern. Owns nothing; buffers come from the case runner.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "device/gpu_device.h"
#include "measure/iteration_clock.h"
#include "plan/plan.h"
#include "plugin/backend_session.h"

namespace commbench {

struct OpBuffers {
  void* send = nullptr;
  void* recv = nullptr;
  void* ack = nullptr;  // 64-byte scratch for the unidir_bw window acknowledgement
};

// memory = "cuda" through a host-memory backend: the data lives in device buffers and each
// iteration copies it to the (pinned) op buffers and back, inside the timed region.
struct StagingCopies {
  void* device_send = nullptr;  // same layout as OpBuffers::send, on the device
  void* device_recv = nullptr;
  size_t send_bytes = 0;
  size_t recv_bytes = 0;
};

// How the executor talks to the backend and the GPU for this execution.
struct ExecutorSetup {
  cb_mem op_memory = CB_MEM_HOST;  // cb_op_args.mem_type
  GpuDevice* gpu = nullptr;        // set when the execution uses CUDA
  bool stream_ordered = false;     // ops enqueue on gpu->stream(), passed in cb_op_args.stream
  bool group_p2p = false;          // stream-ordered with CB_CAP_GROUPS: p2p posts go in one group
  TimingMethod timing = TimingMethod::Host;
  std::optional<StagingCopies> staging;
  // Collectives through post and wait even where the table has `complete` (which is what is timed
  // on the host clocks): conformance proves both paths, since workloads post.
  bool post_and_wait = false;
};

class OpExecutor {
 public:
  OpExecutor(BackendSession& session, const Execution& exec, const CaseSpec& spec, int rank,
             const OpBuffers& buffers, const ExecutorSetup& setup);
  // Runs one iteration; returns this rank's time for the quantity the pattern reports, in
  // microseconds (collectives: the op; pingpong: half the round trip; unidir_bw: per message).
  double run_once(int32_t timeout_ms);
  // ExecutorSetup::post_and_wait, per call (conformance alternates the two paths).
  void collectives_through_post(bool on) { setup_.post_and_wait = on; }
  // timing = "batch" (nccl-tests' and OSU's method): `n` iterations back to back, no barrier in
  // between; returns this rank's n per-iteration times, each the difference of consecutive
  // completion times (scaled like run_once's: half a round trip, per message), so their sum is
  // the rank's elapsed time. On the host clocks the completions are read with the host timer;
  // collectives with gpu_timing = "cuda_event" enqueue all n with an event after each and wait
  // once (events around N enqueued iterations); other cuda_event cases (p2p patterns) time each
  // iteration with its own events, back to back. The ranks must have been synchronised just before.
  // Event-timed collectives record an event after each group of iterations that lasts ~400 µs
  // (event_group: each event costs GPU time), each iteration's sample its group's mean.
  std::vector<double> run_back_to_back(int n, int32_t timeout_ms);
  // For the trace: the whole iterations of the last run_back_to_back, unscaled (a round trip, a
  // window; a rank that reports nothing still has its iterations), in microseconds, when asked
  // for with keep_iteration_times(true) before it (off: nothing kept, nothing read). They run
  // consecutively from just before the call, except with `ends_at_return`: GPU events of
  // enqueued collectives, whose first one started when the stream reached it, some time after
  // the call, and whose last one ended shortly before the call returned.
  struct IterationTimes {
    std::vector<double> us;
    bool ends_at_return = false;
  };
  void keep_iteration_times(bool on) { keep_times_ = on; }
  const IterationTimes& iteration_times() const { return times_; }
  // timing = "graph" (nccl-tests -G): `n` collectives and an event after each group of them
  // captured into a CUDA graph, launched after `before_launch` (the synchronised start) returns;
  // at most 1,000 iterations per graph, launched again (each launch after before_launch) for more.
  // Only where graph_reason() is empty.
  std::vector<double> run_graph(int n, int32_t timeout_ms, const std::function<void()>& before_launch);
  // Why this case cannot be timed as a graph ("" = it can); `capturable`: CB_CAP_GRAPH_CAPTURE.
  std::string graph_reason(bool capturable) const;
  // The clock the record is labelled with.
  TimingMethod timing() const { return setup_.timing; }
  // Collectives timed with CUDA events back to back (batch): this rank's host time to enqueue
  // one iteration (the op and its event), mean over the batches so far; 0 when not measured.
  // Where it exceeds the GPU's time per op, the host, not the GPU, sets the pace.
  double host_us_per_op() const { return host_batches_ ? host_us_sum_ / host_batches_ : 0.0; }
  // timing = "per_iteration": run_once, its page faults counted as timed.
  double run_timed_once(int32_t timeout_ms);
  // Page faults this thread took inside the timed loops so far (run_back_to_back, run_graph's
  // launch, run_timed_once), not in their setup; -1 when they could not be read.
  int64_t timed_page_faults() const { return timed_page_faults_; }
  // Batch runs of point-to-point patterns report one rank's clock, as OSU does: the initiator
  // (pingpong, unidir_bw and bidir_bw: the first peer; msg_rate: rank 0). -1 for the others.
  int reporting_rank() const;  // reporting_rank(exec, op) below
  // Whether the case runner should synchronise all ranks before every timed iteration. Not
  // for pingpong: its round trips run back to back, as in osu_latency and ucx_perftest (the
  // responder is already waiting when the next ping leaves), and a barrier in between would
  // measure a cold path that no streaming exchange takes.
  bool barrier_each_iteration() const { return spec_.op != OpKind::PingPong; }
  // The ranks were just synchronised by someone else (a barrier): pingpong's next round trip
  // starts with its untimed synchronising exchange again.
  void resynchronise() { in_step_ = false; }
  // Before back-to-back iterations, right after a barrier: pingpong's untimed synchronising
  // exchange, so that the barrier's exit skew is not in the first round trip.
  void settle(int32_t timeout_ms);

 private:
  // `window` sends to and/or receives from `peer` in flight at once, all completed; then, when
  // `ack_from_receiver`, the receiving side acknowledges with one byte so that the sender's
  // time covers delivery. Returns the elapsed time in microseconds.
  double windowed(int peer, bool send, bool recv, bool ack_from_receiver, int32_t timeout_ms);
  double collective(int32_t timeout_ms);
  void pingpong_sync(int peer, bool initiator, int32_t timeout_ms);
  // What run_once's time is multiplied by to get a sample (1/2 for a round trip, 1/window per
  // message, 0 for a rank that reports nothing).
  double sample_scale() const;
  std::vector<double> events_after_each(int n, int32_t timeout_ms);
  // run_graph's capture of `n` collectives with an event node after each `group`, instantiated.
  cuda::GraphExec capture_graph(int n, int group);
  std::vector<double> event_differences(int n) const;  // pool events 0..n, consecutive, in us
  // Iterations per timing event in event-timed batches and graphs (event nodes cost GPU time).
  int event_group(int n) const;
  // n samples from the events closing groups of `group` iterations: each its group's span / size.
  std::vector<double> group_samples(int n, int group) const;
  double run_one_iteration(int32_t timeout_ms);
  double pingpong_iteration(int32_t timeout_ms);
  double pingpong_initiator(const cb_op_args& send, const cb_op_args& recv, int32_t timeout_ms);
  double ring(cb_op_args send, cb_op_args recv, int32_t timeout_ms);
  void group_start() { if (setup_.group_p2p) session_.group_start(); }
  void group_end() { if (setup_.group_p2p) session_.group_end(); }
  void post_and_wait(const cb_op_args& args, int32_t timeout_ms);
  cb_op_args make_base_args() const;
  const cb_op_args& base_args() const { return base_; }
  struct PeerArgs {
    cb_op_args send, recv;
  };
  PeerArgs make_pingpong_args() const;

  BackendSession& session_;
  const Execution& exec_;
  const CaseSpec& spec_;
  int rank_;
  OpBuffers buf_;
  ExecutorSetup setup_;
  cb_op_args base_;  // every op's arguments before the pattern's changes: built once, not per op
  PeerArgs pingpong_;  // pingpong's send and receive, built once: a round trip is sub-microsecond
  IterationClock clock_;
  bool in_step_ = false;  // pingpong: the peers already exchanged since the last barrier
  bool keep_times_ = false;
  IterationTimes times_;
  double host_us_sum_ = 0;
  int host_batches_ = 0;
  int64_t timed_page_faults_ = 0;
  double op_us_estimate_ = 0;  // the fastest run_once so far (warm-up, checks), µs; 0: none yet
};

// The rank whose clock a batch run of `op` reports (OpExecutor::reporting_rank), -1 for every rank.
int reporting_rank(const Execution& e, OpKind op);

}  // namespace commbench
