#include "transfers.h"

#include "errors.h"

namespace commbench::ucx_backend {
namespace {

std::string describe(const Transfer& t) {
  return std::string(t.is_recv ? "receive of " : "send of ") + std::to_string(t.bytes) +
         " bytes " + (t.is_recv ? "from" : "to") + " rank " + std::to_string(t.peer);
}

}  // namespace

void TagEngine::fail_send_to_failed_peer(const Transfer& t) const {
  fail_ucs(describe(t), endpoints_.peer_status(t.peer), "this peer's endpoint failed earlier");
}

void TagEngine::fail_start(const Transfer& t, ucs_status_t status) const { fail_ucs(describe(t), status); }

void TagEngine::fail_check(const Transfer& t) const {
  if (t.status == UCS_ERR_MESSAGE_TRUNCATED)
    fail(CB_ERR_INVALID_ARGUMENT, describe(t) + ": the peer sent more bytes than were posted "
                                                "(the ranks disagree on the message size)");
  if (t.status != UCS_OK) fail_ucs(describe(t), t.status);
  fail(CB_ERR_INVALID_ARGUMENT, describe(t) + ": got " + std::to_string(t.info.length) +
                                    " bytes (the ranks disagree on the message size)");
}

bool TagEngine::any_pending_peer_failed(std::span<Transfer> transfers) const {
  for (const Transfer& t : transfers)
    if (!t.done() && endpoints_.peer_status(t.peer) != UCS_OK) return true;
  return false;
}

void TagEngine::discard_posted(Transfer& t) {
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

}  // namespace commbench::ucx_backend
