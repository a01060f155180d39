#include "measure/op_executor.h"

#include <vector>

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

}  // namespace

OpExecutor::OpExecutor(BackendSession& session, const Execution& exec, const CaseSpec& spec,
                       int rank, const OpBuffers& buffers)
    : session_(session), exec_(exec), spec_(spec), rank_(rank), buf_(buffers),
      timer_(HostTimer::get()) {}

double OpExecutor::now_us() const { return timer_.now_us(); }

cb_op_args OpExecutor::base_args() const {
  cb_op_args a{};
  a.struct_size = CB_STRUCT_SIZE(cb_op_args, tag);
  a.op = op_info(spec_.op).abi_op;
  a.sendbuf = buf_.send;
  a.recvbuf = buf_.recv;
  a.count = spec_.count;
  a.dtype = spec_.dtype;
  a.redop = spec_.redop.value_or(CB_REDOP_SUM);
  a.root = spec_.root;
  a.mem_type = exec_.memory;
  return a;
}

void OpExecutor::post_and_wait(const cb_op_args& args, int32_t timeout_ms) {
  session_.complete(args, timeout_ms);
}

void OpExecutor::wait_all(std::vector<cb_request*>& reqs, int32_t timeout_ms) {
  try {
    for (cb_request* r : reqs) session_.wait(r, timeout_ms);
  } catch (...) {
    for (cb_request* r : reqs) session_.release(r);
    reqs.clear();
    throw;
  }
  for (cb_request* r : reqs) session_.release(r);
  reqs.clear();
}

double OpExecutor::windowed(int peer, bool send, bool recv, bool ack_from_receiver,
                            int32_t timeout_ms) {
  const int window = exec_.window > 0 ? exec_.window : 1;
  cb_op_args data = base_args();
  data.peer = peer;
  std::vector<cb_request*> reqs;
  reqs.reserve(2 * static_cast<size_t>(window));
  auto post_all = [&](cb_op op) {
    data.op = op;
    try {
      for (int i = 0; i < window; ++i) reqs.push_back(session_.post(data));
    } catch (...) {
      for (cb_request* r : reqs) session_.release(r);
      throw;
    }
  };
  const double t0 = now_us();
  if (recv) post_all(CB_OP_RECV);  // receives first: a rendezvous send then finds its match
  if (send) post_all(CB_OP_SEND);
  wait_all(reqs, timeout_ms);
  if (ack_from_receiver) {
    cb_op_args ack = base_args();
    ack.sendbuf = buf_.ack;
    ack.recvbuf = buf_.ack;
    ack.count = 1;
    ack.dtype = CB_DTYPE_UINT8;
    ack.tag = 1;
    ack.peer = peer;
    ack.op = send ? CB_OP_RECV : CB_OP_SEND;
    post_and_wait(ack, timeout_ms);
  }
  return now_us() - t0;
}

double OpExecutor::run_once(int32_t timeout_ms) {
  const int world = exec_.world_size;
  const int a = exec_.peers[0], b = exec_.peers[1];
  cb_op_args send = base_args();
  send.op = CB_OP_SEND;
  cb_op_args recv = base_args();
  recv.op = CB_OP_RECV;

  switch (spec_.op) {
    case OpKind::PingPong: {
      if (rank_ != a && rank_ != b) return 0;
      const int peer = rank_ == a ? b : a;
      send.peer = recv.peer = peer;
      // After a barrier, an untimed 1-byte exchange first: the ranks leave the barrier
      // microseconds apart, and without it that skew would be part of a sub-microsecond round
      // trip. After it (and after every round trip) the responder is already waiting when the
      // timed ping leaves.
      cb_op_args sync = base_args();
      sync.sendbuf = sync.recvbuf = buf_.ack;
      sync.count = 1;
      sync.dtype = CB_DTYPE_UINT8;
      sync.tag = 2;
      sync.peer = peer;
      const bool synchronise = !in_step_;
      in_step_ = true;
      if (rank_ == a) {
        if (synchronise) {
          sync.op = CB_OP_SEND;
          post_and_wait(sync, timeout_ms);
          sync.op = CB_OP_RECV;
          post_and_wait(sync, timeout_ms);
        }
        // The pong's receive is posted before the clock starts: on shared memory the pong can
        // be back before a receive posted after the ping would be, and that bookkeeping would
        // be timed as latency.
        PostedRequest pong(session_, recv);
        const double t0 = now_us();
        post_and_wait(send, timeout_ms);
        pong.wait(timeout_ms);
        return (now_us() - t0) / 2;  // half round trip, on the initiator's clock
      }
      if (synchronise) {
        sync.op = CB_OP_RECV;
        post_and_wait(sync, timeout_ms);
        sync.op = CB_OP_SEND;
        post_and_wait(sync, timeout_ms);
      }
      post_and_wait(recv, timeout_ms);
      post_and_wait(send, timeout_ms);
      return 0;  // the responder's clock would also count the synchronising exchange
    }
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
      const double t0 = now_us();
      cb_request* r1 = nullptr;
      cb_request* r2 = nullptr;
      try {
        // Receive first: a backend whose send waits for the receiver cannot deadlock the ring.
        if (session_.has_groups()) session_.group_start();
        r1 = session_.post(recv);
        r2 = session_.post(send);
        if (session_.has_groups()) session_.group_end();
        session_.wait(r1, timeout_ms);
        session_.wait(r2, timeout_ms);
      } catch (...) {
        if (r1) session_.release(r1);
        if (r2) session_.release(r2);
        throw;
      }
      session_.release(r1);
      session_.release(r2);
      return now_us() - t0;
    }
    default: {
      const cb_op_args args = base_args();
      const double t0 = now_us();
      cb_request* req = session_.post(args);
      try {
        session_.wait(req, timeout_ms);
      } catch (...) {
        session_.release(req);
        throw;
      }
      const double t1 = now_us();  // releasing the request is bookkeeping, not the op
      session_.release(req);
      return t1 - t0;
    }
  }
}

}  // namespace commbench
