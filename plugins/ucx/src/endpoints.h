// Endpoints to the peers of one communicator: created from the peers' worker addresses, eagerly
// or on first use, with UCX's peer error handling so that a dead peer is reported on its
// endpoint instead of being noticed only when a deadline passes.
#pragma once

#include <memory>
#include <vector>

#include <ucp/api/ucp.h>

#include "options.h"
#include "worker.h"

namespace commbench::ucx_backend {

class Endpoints {
 public:
  Endpoints(Worker& worker, std::vector<std::vector<unsigned char>> addresses, ErrorHandling mode);
  ~Endpoints();  // force-closes what is still open (close_all first for an orderly close)
  Endpoints(const Endpoints&) = delete;
  Endpoints& operator=(const Endpoints&) = delete;

  int size() const { return static_cast<int>(addresses_.size()); }
  ucp_ep_h get(int peer) {
    ucp_ep_h ep = endpoints_[static_cast<size_t>(peer)];
    return ep != nullptr ? ep : connect(peer);
  }
  // Every peer but `self`: an endpoint to oneself would add UCX's self transport to every
  // progress call; it is connected on first use only (a rank sending to itself).
  void connect_all(int self);
  // UCS_OK, or the error UCX reported for this peer's endpoint (it is then unusable).
  ucs_status_t peer_status(int peer) const { return failures_[static_cast<size_t>(peer)]->status; }
  bool any_failure() const { return failed_count_ > 0; }

  // Closes every endpoint: flushing outstanding operations, or forcing (abort; needs
  // error_handling = peer on every rank). Gives up waiting at the deadline.
  void close_all(bool force, Clock::time_point deadline);

 private:
  struct PeerFailure {
    Endpoints* owner;
    int peer;
    ucs_status_t status = UCS_OK;
  };
  static void on_error(void* arg, ucp_ep_h ep, ucs_status_t status);
  ucp_ep_h connect(int peer);

  Worker& worker_;
  std::vector<std::vector<unsigned char>> addresses_;
  std::vector<ucp_ep_h> endpoints_;
  std::vector<std::unique_ptr<PeerFailure>> failures_;  // stable addresses for the callback
  ErrorHandling mode_;
  int failed_count_ = 0;
};

}  // namespace commbench::ucx_backend
