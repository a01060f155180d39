// The store backend: an example commbench plugin whose every operation travels through the
// services the host hands to init() (bootstrap allgather/broadcast/barrier and the run's
// key/value store). It needs no network library and no hardware, so it runs anywhere commbench
// runs, and it is slow: use it as a readable model of the ABI, not as something to benchmark.
//
// Only the public ABI header and the header-only SDK are used: nothing from commbench's sources.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include <commbench/backend.h>

// The ABI declares these handles as incomplete structs; each plugin defines their bodies.
// They are global-namespace structs because the header declares them there.

struct cb_error {
  cb_status code;
  std::string message;  // error_message() returns message.c_str(): valid until error_destroy
};

struct cb_backend {
  const cb_host_services* host;  // valid until finalize (ABI guarantee), so keeping it is fine
  int32_t op_timeout_ms;         // option "timeout_ms": limit of every store wait inside an op
  uint64_t comms_created = 0;    // names each communicator's keys apart
};

struct cb_comm {
  cb_backend* backend;
  std::string key_prefix;         // "comm<N>/": this communicator's corner of the key space
  uint64_t collective_seq = 0;    // advances identically on every rank (collectives are ordered)
  // Point-to-point sequence numbers per (peer, tag): the n-th send to a peer with a tag
  // matches the n-th receive from us with that tag, which is exactly the ABI's ordering rule.
  std::map<std::pair<int32_t, uint32_t>, uint64_t> sent, received;
};

struct cb_request {
  // Collectives and sends complete inside post(). A receive does not: post() only reserves its
  // sequence number, and test()/wait() pick the message up. That lets a rank post its receive
  // before its send (commbench's sendrecv ring does), which would deadlock if post(recv) blocked.
  cb_comm* comm = nullptr;
  std::string pending_key;  // non-empty: a receive still to complete
  void* recvbuf = nullptr;
  size_t bytes = 0;
};

namespace store_backend {

// Inside the plugin, failures are C++ exceptions carrying an ABI status; the functions in the
// table catch them and return a cb_error*, because no exception may cross the C boundary.
class Failure : public std::runtime_error {
 public:
  Failure(cb_status code, const std::string& message) : std::runtime_error(message), code_(code) {}
  cb_status code() const { return code_; }

 private:
  cb_status code_;
};

// Validates the arguments (UNIMPLEMENTED for what the capabilities do not offer,
// INVALID_ARGUMENT for impossible values) and runs the operation to completion, except a
// receive, which is left pending in `request`.
void run_operation(cb_comm& comm, const cb_op_args& args, cb_request& request);

// Completes a pending receive if its message arrives within `timeout_ms` (0: just look;
// negative: no limit). Returns whether the request is complete now.
bool try_complete(cb_request& request, int32_t timeout_ms);

// Throws Failure when a host service reports an error (`what` names the call for the message).
void check_host(cb_status status, const char* what);

}  // namespace store_backend
