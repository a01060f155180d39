#include <memory>
#include <vector>

#include "capabilities.h"
#include "commbench/sdk/dtypes.hpp"
#include "commbench/sdk/op_args.hpp"
#include "communicator.h"
#include "errors.h"
#include "request.h"
#include "tags.h"

namespace commbench::ucx_backend {
namespace {

// The SDK's checks against what this process advertises, then the ucx plugin's own limits.
cb_op_args check_args(const cb_comm& comm, const cb_op_args& given) {
  const cb_op_args a = sdk::checked_op_args(given, comm.rank, comm.size, comm.backend.capabilities);
  if (a.mem_type == CB_MEM_CUDA && !sdk::is_point_to_point(a.op))
    fail(CB_ERR_UNIMPLEMENTED, "collectives on cuda memory are not implemented by the ucx plugin "
                               "(its reductions run on the host); send/recv are");
  if (sdk::is_point_to_point(a.op) && a.tag > kMaxUserTag)
    fail(CB_ERR_INVALID_ARGUMENT, "tag " + std::to_string(a.tag) + " is above the largest the ucx "
                                  "plugin carries (2^31-1)");
  return a;
}

// check_args, once per distinct struct (sdk::CheckedArgsCache): rank, size, capabilities and the
// tag limit are fixed for the communicator's life.
// The reference is valid until the next validate.
const cb_op_args& validate(cb_comm& comm, const cb_op_args& given) {
  return comm.checked_args.get(given, [&](const cb_op_args& g) { return check_args(comm, g); });
}

// Starts a validated send or receive.
[[gnu::always_inline]] inline void start_transfer(cb_comm& comm, const cb_op_args& a, Transfer& t) {
  const size_t bytes = a.count * sdk::dtype_size(a.dtype);
  const uint32_t tag = a.tag;
  if (a.op == CB_OP_SEND) comm.tags->start_send(t, a.peer, user_tag(tag, comm.rank), a.sendbuf, bytes);
  else comm.tags->start_recv(t, a.peer, user_tag(tag, a.peer), a.recvbuf, bytes);
}

CollectiveArgs collective_args(const cb_op_args& a) {
  CollectiveArgs args;
  args.sendbuf = a.sendbuf;
  args.recvbuf = a.recvbuf;
  args.count = a.count;
  args.dtype = a.dtype;
  args.redop = a.redop;
  args.root = a.root;
  return args;
}

Deadline deadline_for(const cb_comm& comm, int32_t timeout_ms) {
  return Deadline::after(timeout_ms < 0 ? Clock::duration(comm.backend.options.timeout)
                                        : Clock::duration(std::chrono::milliseconds(timeout_ms)));
}

}  // namespace

std::unique_ptr<cb_request> post_op(cb_comm& comm, const cb_op_args& given) {
  const cb_op_args& a = validate(comm, given);
  auto request = std::make_unique<cb_request>();
  request->comm = &comm;
  if (a.op == CB_OP_SEND || a.op == CB_OP_RECV) {
    start_transfer(comm, a, request->transfer);
  } else {
    run_on_channel(comm, a.op, collective_args(a), comm.op_deadline());
    request->transfer.status = UCS_OK;
  }
  return request;
}

bool test_request(cb_request& request) {
  Transfer& t = request.transfer;
  if (!t.done()) {
    request.comm->worker->progress();
    if (!request.comm->tags->poll(t)) {
      if (request.comm->endpoints->peer_status(t.peer) == UCS_OK) return false;
      // The peer failed: wait_all with an expired deadline reports it and releases the request.
      Deadline now = Clock::now();
      request.comm->tags->wait_all(std::span<Transfer>(&t, 1), now);
    }
  }
  request.comm->tags->check(t);
  return true;
}

void wait_request(cb_request& request, int32_t timeout_ms) {
  Transfer& t = request.transfer;
  if (!t.done()) {
    Deadline deadline = deadline_for(*request.comm, timeout_ms);
    request.comm->tags->wait_all(std::span<Transfer>(&t, 1), deadline);
    return;
  }
  request.comm->tags->check(t);
}

void complete_op(cb_comm& comm, const cb_op_args& given, int32_t timeout_ms) {
  const cb_op_args& a = validate(comm, given);
  if (!sdk::is_point_to_point(a.op)) {
    // Exactly as post runs it (bounded by the per-op limit, as post + wait is), without the request.
    run_on_channel(comm, a.op, collective_args(a), comm.op_deadline());
    return;
  }
  // The request-free path of a single send or receive: the transfer lives on this stack.
  Transfer t;
  struct Discard {  // a receive still posted must not outlive the call (its buffer may go)
    TagEngine& tags;
    Transfer& t;
    ~Discard() { tags.discard(t); }
  } discard{*comm.tags, t};
  start_transfer(comm, a, t);
  if (t.done()) {
    comm.tags->check(t);
    return;
  }
  Deadline deadline = deadline_for(comm, timeout_ms);
  comm.tags->wait_all(std::span<Transfer>(&t, 1), deadline);
}

}  // namespace commbench::ucx_backend

namespace {

struct RequestPool {
  std::vector<void*> free;
  ~RequestPool() {
    for (void* p : free) ::operator delete(p);
  }
};
thread_local RequestPool request_pool;
constexpr size_t kPoolLimit = 1024;  // more than any window keeps in flight

}  // namespace

void* cb_request::operator new(size_t size) {
  if (size == sizeof(cb_request) && !request_pool.free.empty()) {
    void* p = request_pool.free.back();
    request_pool.free.pop_back();
    return p;
  }
  return ::operator new(size);
}

void cb_request::operator delete(void* p) noexcept {
  if (p == nullptr) return;
  if (request_pool.free.size() < kPoolLimit) {
    try {
      request_pool.free.push_back(p);
      return;
    } catch (...) {
      // No room to remember it: give it back instead.
    }
  }
  ::operator delete(p);
}

cb_request::~cb_request() {
  if (comm != nullptr && comm->tags) comm->tags->discard(transfer);
}
