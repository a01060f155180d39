// The ucx backend's options, from the experiment's [run.options.ucx] table.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <ucs/type/thread_mode.h>

#include "collectives/collectives.h"
#include "commbench/backend.h"

namespace commbench::ucx_backend {

enum class ProgressMode {
  kPolling,  // test()/wait() spin on ucp_worker_progress: lowest latency, one core per rank
  kWait,     // wait() sleeps on the worker's event fd between progress calls: saves the core
};

enum class ErrorHandling {
  kNone,  // UCX's default: every protocol; a dead peer is noticed by the timeouts and the agent
  kPeer,  // UCP_ERR_HANDLING_MODE_PEER: a dead peer fails the ops on its endpoint at once, but
          // UCX 1.13 then avoids its zero-copy shared-memory protocols (8x less bandwidth here)
};

struct UcxOptions {
  std::string transports;  // UCX_TLS syntax ("tcp", "sm,self", "^cma"); empty: UCX's default
  ucs_thread_mode_t thread_mode = UCS_THREAD_MODE_SINGLE;
  // Unset: polling when this host's ranks fit on its CPUs, wait when they do not (spinning
  // ranks that outnumber the cores steal each other's time slices: milliseconds per message).
  std::optional<ProgressMode> progress;
  std::string rndv_thresh;  // UCX_RNDV_THRESH ("auto" or bytes); empty: UCX's default
  bool registration = false;  // buffers from ucp_mem_map, their memory handles passed to ops
  ErrorHandling error_handling = ErrorHandling::kNone;
  // Endpoints to every peer at communicator creation; otherwise on first use. Default: eager
  // up to this many ranks, lazy above (wire-up to thousands of peers costs memory and time).
  int eager_endpoints_up_to = 64;
  AlgorithmChoice algorithms;
  std::chrono::milliseconds timeout{300000};  // every op and wait
};

// Parses and validates; throws PluginError(CB_ERR_INVALID_ARGUMENT) naming the bad key or value
// and listing what is accepted.
UcxOptions parse_options(const cb_option* options, size_t count);

std::string_view thread_mode_name(ucs_thread_mode_t mode);

}  // namespace commbench::ucx_backend
