// Tagged sends and receives in flight, and waiting for them: what both the core's send/recv
// requests and the collective algorithms are made of.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include <ucp/api/ucp.h>

#include "endpoints.h"
#include "memory.h"
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

  // `fast_completion`: UCP_OP_ATTR_FLAG_FAST_CMPL, which sends eagerly up to UCX's local
  // rendezvous threshold (collectives/eager_sends.h says when and why).
  void start_send(Transfer& t, int peer, ucp_tag_t tag, const void* buf, size_t bytes,
                  bool fast_completion = false);
  void start_recv(Transfer& t, int peer, ucp_tag_t tag, void* buf, size_t bytes);

  // Records completion if UCX has finished the transfer (no progress call); true when done.
  bool poll(Transfer& t);
  // Throws PluginError if a finished transfer failed or a receive got the wrong size.
  void check(const Transfer& t) const;
  // Progresses until every transfer is done, a peer of a pending one fails, or the deadline;
  // throws then (after cancelling what is still posted), else checks each one. Waits that share
  // `deadline` share its clock (a collective's waits: worker.h, Deadline).
  void wait_all(std::span<Transfer> transfers, Deadline& deadline);
  // Cancels a receive still posted and releases UCP's request; safe on any transfer.
  void discard(Transfer& t);

  Worker& worker() { return worker_; }

 private:
  void finish(Transfer& t, ucs_status_t status);
  [[noreturn]] void fail_pending(std::span<Transfer> transfers, bool timed_out);

  Worker& worker_;
  Endpoints& endpoints_;
  MemoryRegistry& memory_;
  int rank_;
};

}  // namespace commbench::ucx_backend
