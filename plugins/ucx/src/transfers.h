// Tagged sends and receives in flight, and waiting for them: what both the core's send/recv
// requests and the collective algorithms are made of.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include <ucp/api/ucp.h>

#include "endpoints.h"
#include "memory.h"
#include "tags.h"
#include "worker.h"

namespace commbench::ucx_backend {

struct Transfer {
  void* request = nullptr;  // UCP's request while in flight
  ucs_status_t status = UCS_INPROGRESS;
  int peer = -1;
  bool is_recv = false;
  size_t bytes = 0;
  ucp_tag_recv_info_t info{};  // what a receive got

  bool done() const { return status != UCS_INPROGRESS; }
};

class TagEngine {
 public:
  TagEngine(Worker& worker, Endpoints& endpoints, MemoryRegistry& memory, int rank)
      : worker_(worker), endpoints_(endpoints), memory_(memory), rank_(rank) {}

  // The per-message path below is inline and its failures are out of line (the fail_*
  // members): the plugin's share of a small message's op is about 160 instructions, and calls,
  // register saves and stack frames sized for building error text had been half of it
  // (docs/performance.md, "The path per op, halved").

  // `fast_completion`: UCP_OP_ATTR_FLAG_FAST_CMPL, which sends eagerly up to UCX's local
  // rendezvous threshold (collectives/eager_sends.h says when and why).
  void start_send(Transfer& t, int peer, ucp_tag_t tag, const void* buf, size_t bytes,
                  bool fast_completion = false) {
    t = Transfer{nullptr, UCS_INPROGRESS, peer, false, bytes, {}};
    if (endpoints_.any_failure() && endpoints_.peer_status(peer) != UCS_OK) [[unlikely]]
      fail_send_to_failed_peer(t);
    ucp_request_param_t p;  // UCX reads only the fields op_attr_mask names
    set_memh(p, buf, bytes);
    if (fast_completion) p.op_attr_mask |= UCP_OP_ATTR_FLAG_FAST_CMPL;
    started(t, ucp_tag_send_nbx(endpoints_.get(peer), buf, bytes, tag, &p));
  }
  void start_recv(Transfer& t, int peer, ucp_tag_t tag, void* buf, size_t bytes) {
    t = Transfer{nullptr, UCS_INPROGRESS, peer, true, bytes, {}};
    ucp_request_param_t p;
    set_memh(p, buf, bytes);
    // Always a request, even for a message that is already here: UCX 1.13 does not fill
    // recv_info on immediate completion, and the received length is how a size mismatch between
    // ranks is caught.
    p.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    started(t, ucp_tag_recv_nbx(worker_.get(), buf, bytes, tag, kFullTagMask, &p));
  }

  // Records completion if UCX has finished the transfer (no progress call); true when done.
  bool poll(Transfer& t) {
    if (t.done()) return true;
    const ucs_status_t s = t.is_recv ? ucp_tag_recv_request_test(t.request, &t.info)
                                     : ucp_request_check_status(t.request);
    if (s == UCS_INPROGRESS) return false;
    finish(t, s);
    return true;
  }
  // Throws PluginError if a finished transfer failed or a receive got the wrong size.
  void check(const Transfer& t) const {
    if (t.status != UCS_OK || (t.is_recv && t.info.length != t.bytes)) [[unlikely]] fail_check(t);
  }
  // Progresses until every transfer is done, a peer of a pending one fails, or the deadline;
  // throws then (after cancelling what is still posted), else checks each one. Waits that share
  // `deadline` share its clock (a collective's waits: worker.h, Deadline).
  [[gnu::always_inline]] void wait_all(std::span<Transfer> transfers, Deadline& deadline) {
    bool peer_failed = false;
    const bool all_done = worker_.progress_until(
        [&] {
          bool done = true;
          for (Transfer& t : transfers) done = poll(t) && done;
          if (!done && endpoints_.any_failure()) [[unlikely]]
            peer_failed = any_pending_peer_failed(transfers);
          return done || peer_failed;
        },
        deadline);
    if (peer_failed || !all_done) [[unlikely]] fail_pending(transfers, !peer_failed);
    for (const Transfer& t : transfers) check(t);
  }
  // Cancels a receive still posted and releases UCP's request; safe on any transfer.
  void discard(Transfer& t) {
    if (t.request != nullptr) [[unlikely]] discard_posted(t);
  }

  Worker& worker() { return worker_; }

 private:
  void set_memh(ucp_request_param_t& p, const void* buf, size_t bytes) const {
    const ucp_mem_h memh = memory_.find(buf, bytes);
    p.op_attr_mask = memh != nullptr ? UCP_OP_ATTR_FIELD_MEMH : 0;
    p.memh = memh;
  }
  void started(Transfer& t, ucs_status_ptr_t r) {
    if (r == nullptr) t.status = UCS_OK;
    else if (UCS_PTR_IS_ERR(r)) [[unlikely]] fail_start(t, UCS_PTR_STATUS(r));
    else t.request = r;
  }
  void finish(Transfer& t, ucs_status_t status) {
    t.status = status;
    if (t.request != nullptr) {
      ucp_request_free(t.request);
      t.request = nullptr;
    }
  }
  bool any_pending_peer_failed(std::span<Transfer> transfers) const;
  void discard_posted(Transfer& t);
  [[noreturn, gnu::cold]] void fail_send_to_failed_peer(const Transfer& t) const;
  [[noreturn, gnu::cold]] void fail_start(const Transfer& t, ucs_status_t status) const;
  [[noreturn, gnu::cold]] void fail_check(const Transfer& t) const;
  [[noreturn, gnu::cold]] void fail_pending(std::span<Transfer> transfers, bool timed_out);

  Worker& worker_;
  Endpoints& endpoints_;
  MemoryRegistry& memory_;
  int rank_;
};

}  // namespace commbench::ucx_backend
