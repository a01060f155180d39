// The store backend: an example commbench plugin whose every operation travels through the
// services the host hands to init() (bootstrap allgather/broadcast/barrier and the run's
// key/value store). It needs no network library and no hardware, so it runs anywhere commbench
// runs, and it is slow: use it as a readable model of the ABI, not as something to benchmark.
//
// Only the public ABI header and the header-only C++20 SDK are used: nothing from commbench's
// sources. The SDK supplies the error objects (cb_error, sdk::fail), the exported wrappers
// (sdk::EntryPoints), option parsing and the op-argument checks (sdk::checked_op_args).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include <commbench/backend.h>
#include <commbench/sdk/plugin_error.hpp>  // defines struct cb_error: do not define your own

// The ABI declares these handles as incomplete structs; each plugin defines their bodies.
// They are global-namespace structs because the header declares them there.

struct cb_backend {
  cb_host_services host;         // a checked copy (sdk::copy_host_services); its strings stay valid until finalize
  int32_t op_timeout_ms = 60000; // option "timeout_ms": limit of every store wait inside an op
  uint64_t comms_created = 0;    // names each communicator's keys apart
};

struct cb_comm {
  cb_backend* backend;
  // The option timeout_ms, never longer than comm_create's timeout (docs/plugin-abi.md §4,
  // "Deadlines"): every wait an op makes inside post() uses this.
  int32_t op_timeout_ms = 0;
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

// Inside the plugin, failures are C++ exceptions carrying an ABI status (sdk::fail throws
// sdk::PluginError); the SDK's entry points catch them and return a cb_error*, because no
// exception may cross the C boundary.
using commbench::sdk::fail;

// What this plugin can do: the same with or without a backend (nothing depends on hardware).
cb_capabilities capabilities();

// Validates the arguments (sdk::checked_op_args: UNIMPLEMENTED for what capabilities() does not
// offer, INVALID_ARGUMENT for impossible values) and runs the operation to completion, except a
// receive, which is left pending in `request`.
void run_operation(cb_comm& comm, const cb_op_args& args, cb_request& request);

// Completes a pending receive if its message arrives within `timeout_ms` (0: just look;
// negative: no limit). Returns whether the request is complete now.
bool try_complete(cb_request& request, int32_t timeout_ms);

// Throws (sdk::fail) when a host service reports an error (`what` names the call for the message).
void check_host(cb_status status, const char* what);

}  // namespace store_backend
