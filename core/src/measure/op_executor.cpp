#include "measure/op_executor.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "measure/page_faults.h"

namespace commbench {
namespace {

// One posted request, released on every path.
class PostedRequest {
 public:
  PostedRequest(BackendSession& session, const cb_op_args& args)
      : session_(session), request_(session.post(args)) {}
  ~PostedRequest() { session_.release(request_); }
  PostedRequest(const PostedRequest&) = delete;
  PostedRequest& operator=(const PostedRequest&) = delete;
  void wait(int32_t timeout_ms) { session_.wait(request_, timeout_ms); }

 private:
  BackendSession& session_;
  cb_request* request_;
};

// Requests posted together; waited for together, released on every path.
class RequestSet {
 public:
  explicit RequestSet(BackendSession& s) : s_(s) {}
  ~RequestSet() { for (cb_request* r : reqs_) s_.release(r); }
  void post(const cb_op_args& a) { reqs_.push_back(s_.post(a)); }
  void wait(int32_t timeout_ms) { for (cb_request* r : reqs_) s_.wait(r, timeout_ms); }
  void reserve(size_t n) { reqs_.reserve(n); }

 private:
  BackendSession& s_;
  std::vector<cb_request*> reqs_;
};

}  // namespace

OpExecutor::OpExecutor(BackendSession& session, const Execution& exec, const CaseSpec& spec,
                       int rank, const OpBuffers& buffers, const ExecutorSetup& setup)
    : session_(session), exec_(exec), spec_(spec), rank_(rank), buf_(buffers), setup_(setup),
      base_(make_base_args()), pingpong_(make_pingpong_args()), clock_(setup.timing, setup.gpu) {}

cb_op_args OpExecutor::make_base_args() const {
  cb_op_args a{};
  a.struct_size = CB_STRUCT_SIZE(cb_op_args, tag);
  a.op = op_info(spec_.op).abi_op;
  a.sendbuf = buf_.send;
  a.recvbuf = buf_.recv;
  a.count = spec_.count;
  a.dtype = spec_.dtype;
  a.redop = spec_.redop.value_or(CB_REDOP_SUM);
  a.root = spec_.root;
  a.mem_type = setup_.op_memory;
  a.stream = setup_.stream_ordered && setup_.gpu ? setup_.gpu->stream() : nullptr;
  return a;
}

void OpExecutor::post_and_wait(const cb_op_args& args, int32_t timeout_ms) {
  session_.complete(args, timeout_ms);
}

double OpExecutor::windowed(int peer, bool send, bool recv, bool ack_from_receiver,
                            int32_t timeout_ms) {
  const int window = exec_.window > 0 ? exec_.window : 1;
  cb_op_args data = base_args();
  data.peer = peer;
  cb_op_args ack = base_args();
  ack.sendbuf = buf_.ack;
  ack.recvbuf = buf_.ack;
  ack.count = 1;
  ack.dtype = CB_DTYPE_UINT8;
  ack.tag = 1;
  ack.peer = peer;
  ack.op = send ? CB_OP_RECV : CB_OP_SEND;
  RequestSet reqs(session_);
  reqs.reserve(2 * static_cast<size_t>(window) + 1);
  clock_.start();
  // Receives first: a rendezvous send then finds its match. On a stream-ordered backend the
  // window is one group (ungrouped GPU sends and receives run one after the other, and a
  // receive posted before the peer's send blocks the stream).
  group_start();
  if (recv) for (int i = 0; i < window; ++i) { data.op = CB_OP_RECV; reqs.post(data); }
  if (send) for (int i = 0; i < window; ++i) { data.op = CB_OP_SEND; reqs.post(data); }
  group_end();
  if (setup_.stream_ordered) {
    // Stream order already puts the acknowledgement after the window's transfers.
    if (ack_from_receiver) reqs.post(ack);
    clock_.posted();
    reqs.wait(timeout_ms);
    return clock_.stop(timeout_ms);
  }
  clock_.posted();
  reqs.wait(timeout_ms);
  // Host backends: the receiver acknowledges once its receives completed, so that the
  // sender's time covers delivery.
  if (ack_from_receiver) post_and_wait(ack, timeout_ms);
  return clock_.stop(timeout_ms);
}

OpExecutor::PeerArgs OpExecutor::make_pingpong_args() const {
  PeerArgs p{base_, base_};
  p.send.op = CB_OP_SEND;
  p.recv.op = CB_OP_RECV;
  if (spec_.op == OpKind::PingPong && exec_.peers.size() >= 2)
    p.send.peer = p.recv.peer = rank_ == exec_.peers[0] ? exec_.peers[1] : exec_.peers[0];
  return p;
}

double OpExecutor::pingpong_initiator(const cb_op_args& send, const cb_op_args& recv, int32_t timeout_ms) {
  if (setup_.group_p2p) {
    // GPU send/recv block the stream until matched: the ping and the pong's receive go in one
    // group (the responder receives, then sends, so the pong still follows the ping).
    RequestSet reqs(session_);
    clock_.start();
    group_start();
    reqs.post(recv);
    reqs.post(send);
    group_end();
    clock_.posted();
    reqs.wait(timeout_ms);
    return clock_.stop(timeout_ms) / 2;
  }
  if (setup_.stream_ordered) {
    // Ungrouped stream-ordered backend (none in the tree): the pong's receive goes on the stream
    // before the clock starts, the ping after it.
    PostedRequest pong(session_, recv);
    clock_.start();
    PostedRequest ping(session_, send);
    clock_.posted();
    ping.wait(timeout_ms);
    pong.wait(timeout_ms);
    return clock_.stop(timeout_ms) / 2;
  }
  // Host: send, then receive, as ucx_perftest and osu_latency do. The pong's receive is posted
  // while the ping is in flight, off the round trip's critical path; posted before the ping, it
  // sat between one pong's arrival and the next ping, and back-to-back round trips (batch) timed it.
  clock_.start();
  post_and_wait(send, timeout_ms);
  clock_.posted();
  post_and_wait(recv, timeout_ms);
  return clock_.stop(timeout_ms) / 2;  // half round trip, on the initiator's clock
}

double OpExecutor::ring(cb_op_args send, cb_op_args recv, int32_t timeout_ms) {
  RequestSet reqs(session_);
  clock_.start();
  // Receive first: a backend whose send waits for the receiver cannot deadlock the ring. The
  // completion event goes after group_end: inside the group nothing is on the stream yet.
  const bool grouped = session_.has_groups();
  if (grouped) session_.group_start();
  reqs.post(recv);
  reqs.post(send);
  if (grouped) session_.group_end();
  clock_.posted();
  reqs.wait(timeout_ms);
  return clock_.stop(timeout_ms);
}

double OpExecutor::collective(int32_t timeout_ms) {
  const cb_op_args args = base_args();
  GpuDevice* gpu = setup_.gpu;
  const StagingCopies* st = setup_.staging ? &*setup_.staging : nullptr;
  clock_.start();
  if (st) gpu->copy_to_host_on_stream(buf_.send, st->device_send, st->send_bytes);
  if (!setup_.stream_ordered && session_.has_complete() && !setup_.post_and_wait) {
    // Host clocks (the only ones a backend that is not stream-ordered gets): nothing to mark
    // between post and wait, so one call (ABI 1.1 `complete`) and no request object, as the
    // reference loops call their library once per op. A 1.0 table keeps post/wait/release, with
    // the release outside the clock.
    session_.complete(args, timeout_ms);
    if (st) gpu->copy_to_device_on_stream(st->device_recv, buf_.recv, st->recv_bytes);
    return clock_.stop(timeout_ms);
  }
  cb_request* req = session_.post(args);
  clock_.posted();
  try {
    session_.wait(req, timeout_ms);
    if (st) gpu->copy_to_device_on_stream(st->device_recv, buf_.recv, st->recv_bytes);
  } catch (...) {
    session_.release(req);
    throw;
  }
  const double t = clock_.stop(timeout_ms);  // releasing the request is bookkeeping, not the op
  session_.release(req);
  return t;
}

int reporting_rank(const Execution& e, OpKind op) {
  switch (op) {
    case OpKind::PingPong:
    case OpKind::UnidirBw:
    case OpKind::BidirBw:
      return e.peers[0];
    case OpKind::MsgRate:
      return 0;
    default:
      return -1;
  }
}

int OpExecutor::reporting_rank() const { return commbench::reporting_rank(exec_, spec_.op); }

double OpExecutor::sample_scale() const {
  const int world = exec_.world_size;
  const int a = exec_.peers[0], b = exec_.peers[1];
  const double window = exec_.window > 0 ? exec_.window : 1;
  switch (spec_.op) {
    case OpKind::PingPong: return rank_ == a ? 0.5 : 0.0;  // the responder reports nothing
    case OpKind::UnidirBw:
    case OpKind::BidirBw: return rank_ == a || rank_ == b ? 1.0 / window : 0.0;
    case OpKind::MsgRate: return rank_ < 2 * msg_rate_pairs(world) ? 1.0 / window : 0.0;
    default: return 1.0;
  }
}

void OpExecutor::settle(int32_t timeout_ms) {
  if (spec_.op != OpKind::PingPong || in_step_) return;
  const int a = exec_.peers[0], b = exec_.peers[1];
  if (rank_ != a && rank_ != b) return;
  pingpong_sync(rank_ == a ? b : a, rank_ == a, timeout_ms);
  in_step_ = true;
}

std::vector<double> OpExecutor::run_back_to_back(int n, int32_t timeout_ms) {
  std::vector<double> out(static_cast<size_t>(n), 0.0);
  const bool collective_op = !op_info(spec_.op).point_to_point;
  const HostTimer& timer = HostTimer::get();
  times_ = IterationTimes{};
  if (setup_.timing == TimingMethod::CudaEvent && setup_.stream_ordered && setup_.gpu) {
    if (collective_op && !setup_.staging) {
      out = events_after_each(n, timeout_ms);
      if (keep_times_) times_ = IterationTimes{out, true};  // a collective's sample is its whole iteration
      return out;
    }
    // Point-to-point on the GPU: each iteration between its own events, back to back. Traced,
    // each one's host span too (it is synchronous), read outside its events.
    double previous = keep_times_ ? timer.now_us() : 0.0;
    if (keep_times_) times_.us.resize(static_cast<size_t>(n));
    PageFaultSpan faults(timed_page_faults_);
    for (int i = 0; i < n; ++i) {
      out[static_cast<size_t>(i)] = run_once(timeout_ms);
      if (keep_times_) {
        const double now = timer.now_us();
        times_.us[static_cast<size_t>(i)] = now - previous;
        previous = now;
      }
    }
    return out;
  }
  // Host clocks: consecutive completion times. The gap between one iteration's completion and
  // the next one's post (request release, loop) belongs to the back-to-back stream, as in the
  // reference tools' elapsed / N. Scaled after the loop (the trace keeps the whole iterations).
  {
    PageFaultSpan faults(timed_page_faults_);  // the loop only: not the trace's copy below
    IterationClock::Unread unread(clock_);     // one timer read per iteration: the one below
    double previous = timer.now_us();
    for (int i = 0; i < n; ++i) {
      run_once(timeout_ms);
      const double now = timer.now_us();
      out[static_cast<size_t>(i)] = now - previous;
      previous = now;
    }
  }
  if (keep_times_) times_.us = out;
  const double scale = sample_scale();
  for (double& v : out) v *= scale;
  return out;
}

double OpExecutor::run_timed_once(int32_t timeout_ms) {
  PageFaultSpan faults(timed_page_faults_);
  return run_once(timeout_ms);
}

std::vector<double> OpExecutor::events_after_each(int n, int32_t timeout_ms) {
  GpuDevice& gpu = *setup_.gpu;
  const cb_op_args args = base_args();
  const int group = event_group(n);
  const int groups = (n + group - 1) / group;
  for (int g = 0; g <= groups; ++g) gpu.event(static_cast<size_t>(g));  // pool grown before timing
  // Between two timing events only the ops' own launches: with ABI 1.3's enqueue no request,
  // completion event or allocation per op (nccl-tests' loop has none either). The last op is posted
  // as a request all the same: waiting on it is how a backend reports an asynchronous failure (a
  // peer gone) instead of a bare timeout.
  const bool enqueue = session_.has_enqueue();
  RequestSet reqs(session_);
  reqs.reserve(enqueue ? 1 : static_cast<size_t>(n));
  const HostTimer& timer = HostTimer::get();
  {
    PageFaultSpan faults(timed_page_faults_);  // posts and waits; not the samples' vectors after
    const double t0 = timer.now_us();
    gpu.record_event(0, false);
    for (int i = 0; i < n; ++i) {
      if (enqueue && i + 1 < n) session_.enqueue(args);
      else reqs.post(args);
      if ((i + 1) % group == 0 || i + 1 == n) gpu.record_event(static_cast<size_t>(i / group) + 1, false);
    }
    host_us_sum_ += (timer.now_us() - t0) / n;
    ++host_batches_;
    reqs.wait(timeout_ms);
    wait_for_event(gpu, static_cast<size_t>(groups), timeout_ms);  // the last event is after the last op
  }
  return group_samples(n, group);
}

std::vector<double> OpExecutor::group_samples(int n, int group) const {
  // Each iteration's sample is its group's span divided by the group's size: their sum is the
  // batch's elapsed time, their mean nccl-tests' elapsed / N.
  const std::vector<double> spans = event_differences((n + group - 1) / group);
  std::vector<double> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const int g = i / group;
    const int size = std::min(group, n - g * group);
    out[static_cast<size_t>(i)] = spans[static_cast<size_t>(g)] / size;
  }
  return out;
}

std::vector<double> OpExecutor::event_differences(int n) const {
  GpuDevice& gpu = *setup_.gpu;
  const cuda::Runtime& rt = gpu.rt();
  std::vector<double> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    float ms = 0;
    rt.check(rt.EventElapsedTime(&ms, gpu.event(static_cast<size_t>(i)), gpu.event(static_cast<size_t>(i) + 1)),
             "cudaEventElapsedTime");
    out[static_cast<size_t>(i)] = static_cast<double>(ms) * 1000.0;
  }
  return out;
}

void OpExecutor::pingpong_sync(int peer, bool initiator, int32_t timeout_ms) {
  cb_op_args sync = base_args();
  sync.sendbuf = sync.recvbuf = buf_.ack;
  sync.count = 1;
  sync.dtype = CB_DTYPE_UINT8;
  sync.tag = 2;
  sync.peer = peer;
  sync.op = initiator ? CB_OP_SEND : CB_OP_RECV;
  post_and_wait(sync, timeout_ms);
  sync.op = initiator ? CB_OP_RECV : CB_OP_SEND;
  post_and_wait(sync, timeout_ms);
}

double OpExecutor::run_once(int32_t timeout_ms) {
  const double t = run_one_iteration(timeout_ms);
  if (t > 0 && (op_us_estimate_ <= 0 || t < op_us_estimate_)) op_us_estimate_ = t;
  return t;
}

int OpExecutor::event_group(int n) const {
  // Each timing event costs GPU time of its own between two ops (~1.1 µs on an H200 with NCCL
  // 2.28, measured: an event after every op made 32 MiB allreduces 5.6% slower than nccl-tests'
  // two events per batch). So an event closes a group of iterations that together last at least
  // kEventSpanUs, keeping the events' share under ~0.5%. The estimate is the fastest untimed
  // iteration (warm-up, check) on the same clock; without one, an event after every iteration.
  constexpr double kEventSpanUs = 400;
  if (op_us_estimate_ <= 0) return 1;
  return static_cast<int>(std::clamp(std::ceil(kEventSpanUs / op_us_estimate_), 1.0, static_cast<double>(std::max(n, 1))));
}

double OpExecutor::pingpong_iteration(int32_t timeout_ms) {
  const int a = exec_.peers[0], b = exec_.peers[1];
  if (rank_ != a && rank_ != b) return 0;
  // After a barrier, an untimed 1-byte exchange first: the ranks leave the barrier
  // microseconds apart, and without it that skew would be part of a sub-microsecond round
  // trip. After it (and after every round trip) the responder is already waiting when the
  // timed ping leaves.
  if (!in_step_) pingpong_sync(pingpong_.send.peer, rank_ == a, timeout_ms);
  in_step_ = true;
  if (rank_ == a) return pingpong_initiator(pingpong_.send, pingpong_.recv, timeout_ms);
  post_and_wait(pingpong_.recv, timeout_ms);
  post_and_wait(pingpong_.send, timeout_ms);
  return 0;  // the responder's clock would also count the synchronising exchange
}

double OpExecutor::run_one_iteration(int32_t timeout_ms) {
  if (spec_.op == OpKind::PingPong) return pingpong_iteration(timeout_ms);
  const int world = exec_.world_size;
  const int a = exec_.peers[0], b = exec_.peers[1];
  cb_op_args send = base_args();
  send.op = CB_OP_SEND;
  cb_op_args recv = base_args();
  recv.op = CB_OP_RECV;

  switch (spec_.op) {
    case OpKind::UnidirBw: {
      if (rank_ != a && rank_ != b) return 0;
      const int window = exec_.window > 0 ? exec_.window : 1;
      return windowed(rank_ == a ? b : a, rank_ == a, rank_ == b, true, timeout_ms) / window;
    }
    case OpKind::BidirBw: {
      if (rank_ != a && rank_ != b) return 0;
      const int window = exec_.window > 0 ? exec_.window : 1;
      // Each side's receives complete only once the other side's data is here: no ack needed.
      return windowed(rank_ == a ? b : a, true, true, false, timeout_ms) / window;
    }
    case OpKind::MsgRate: {
      const int pairs = msg_rate_pairs(world);
      if (rank_ >= 2 * pairs) return 0;
      const int window = exec_.window > 0 ? exec_.window : 1;
      const bool sender = rank_ < pairs;
      return windowed(sender ? rank_ + pairs : rank_ - pairs, sender, !sender, true, timeout_ms) /
             window;
    }
    case OpKind::SendRecvRing: {
      send.peer = (rank_ + 1) % world;
      recv.peer = (rank_ + world - 1) % world;
      return ring(send, recv, timeout_ms);
    }
    default:
      return collective(timeout_ms);
  }
}

}  // namespace commbench
