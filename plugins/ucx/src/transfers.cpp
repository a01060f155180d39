#include "transfers.h"

#include "errors.h"
#include "tags.h"

namespace commbench::ucx_backend {
namespace {

ucp_request_param_t params_for(ucp_mem_h memh) {
  ucp_request_param_t p{};
  if (memh != nullptr) {
    p.op_attr_mask = UCP_OP_ATTR_FIELD_MEMH;
    p.memh = memh;
  }
  return p;
}

std::string describe(const Transfer& t) {
  return std::string(t.is_recv ? "receive of " : "send of ") + std::to_string(t.bytes) +
         " bytes " + (t.is_recv ? "from" : "to") + " rank " + std::to_string(t.peer);
}

}  // namespace

void TagEngine::start_send(Transfer& t, int peer, ucp_tag_t tag, const void* buf, size_t bytes,
                           bool fast_completion) {
  t = Transfer{nullptr, UCS_INPROGRESS, peer, false, bytes, {}};
  const ucs_status_t failed = endpoints_.peer_status(peer);
  if (failed != UCS_OK) fail_ucs(describe(t), failed, "this peer's endpoint failed earlier");
  ucp_request_param_t p = params_for(memory_.find(buf, bytes));
  if (fast_completion) p.op_attr_mask |= UCP_OP_ATTR_FLAG_FAST_CMPL;
  const ucs_status_ptr_t r = ucp_tag_send_nbx(endpoints_.get(peer), buf, bytes, tag, &p);
  if (r == nullptr) finish(t, UCS_OK);
  else if (UCS_PTR_IS_ERR(r)) fail_ucs(describe(t), UCS_PTR_STATUS(r));
  else t.request = r;
}

void TagEngine::start_recv(Transfer& t, int peer, ucp_tag_t tag, void* buf, size_t bytes) {
  t = Transfer{nullptr, UCS_INPROGRESS, peer, true, bytes, {}};
  ucp_request_param_t p = params_for(memory_.find(buf, bytes));
  // Always a request, even for a message that is already here: UCX 1.13 does not fill
  // recv_info on immediate completion, and the received length is how a size mismatch between
  // ranks is caught.
  p.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  const ucs_status_ptr_t r = ucp_tag_recv_nbx(worker_.get(), buf, bytes, tag, kFullTagMask, &p);
  if (r == nullptr) finish(t, UCS_OK);
  else if (UCS_PTR_IS_ERR(r)) fail_ucs(describe(t), UCS_PTR_STATUS(r));
  else t.request = r;
}

void TagEngine::finish(Transfer& t, ucs_status_t status) {
  t.status = status;
  if (t.request != nullptr) {
    ucp_request_free(t.request);
    t.request = nullptr;
  }
}

bool TagEngine::poll(Transfer& t) {
  if (t.done()) return true;
  if (t.is_recv) {
    const ucs_status_t s = ucp_tag_recv_request_test(t.request, &t.info);
    if (s == UCS_INPROGRESS) return false;
    finish(t, s);
  } else {
    const ucs_status_t s = ucp_request_check_status(t.request);
    if (s == UCS_INPROGRESS) return false;
    finish(t, s);
  }
  return true;
}

void TagEngine::check(const Transfer& t) const {
  if (t.status == UCS_ERR_MESSAGE_TRUNCATED)
    fail(CB_ERR_INVALID_ARGUMENT, describe(t) + ": the peer sent more bytes than were posted "
                                                "(the ranks disagree on the message size)");
  if (t.status != UCS_OK) fail_ucs(describe(t), t.status);
  if (t.is_recv && t.info.length != t.bytes)
    fail(CB_ERR_INVALID_ARGUMENT, describe(t) + ": got " + std::to_string(t.info.length) +
                                      " bytes (the ranks disagree on the message size)");
}

void TagEngine::discard(Transfer& t) {
  if (t.request == nullptr) return;
  if (t.is_recv && !poll(t)) {
    // A posted receive would otherwise write into a buffer the core is about to free.
    ucp_request_cancel(worker_.get(), t.request);
    Deadline briefly = Deadline::after(std::chrono::milliseconds(100));
    worker_.progress_until([&] { return poll(t); }, briefly);
  }
  if (t.request != nullptr) finish(t, UCS_ERR_CANCELED);
}

void TagEngine::fail_pending(std::span<Transfer> transfers, bool timed_out) {
  std::string what;
  ucs_status_t peer_error = UCS_OK;
  for (Transfer& t : transfers) {
    if (!poll(t)) {
      if (what.empty()) what = describe(t);
      const ucs_status_t s = endpoints_.peer_status(t.peer);
      if (s != UCS_OK) {
        what = describe(t);
        peer_error = s;
      }
    }
  }
  for (Transfer& t : transfers) discard(t);
  if (peer_error != UCS_OK)
    fail(CB_ERR_REMOTE, what + ": the peer failed (" + ucs_status_string(peer_error) +
                            "); it probably exited, see its log");
  if (timed_out)
    fail(CB_ERR_TIMEOUT, what + " did not complete within the timeout (rank " +
                             std::to_string(rank_) + "); check that every rank posts the same ops, "
                             "or raise the ucx option timeout_ms");
  fail(CB_ERR_INTERNAL, what + " did not complete");
}

void TagEngine::wait_all(std::span<Transfer> transfers, Deadline& deadline) {
  bool peer_failed = false;
  const bool all_done = worker_.progress_until(
      [&] {
        bool done = true;
        for (Transfer& t : transfers) done = poll(t) && done;
        if (!done && endpoints_.any_failure()) {
          for (const Transfer& t : transfers)
            if (!t.done() && endpoints_.peer_status(t.peer) != UCS_OK) peer_failed = true;
        }
        return done || peer_failed;
      },
      deadline);
  if (peer_failed || !all_done) fail_pending(transfers, !peer_failed);
  for (const Transfer& t : transfers) check(t);
}

}  // namespace commbench::ucx_backend
