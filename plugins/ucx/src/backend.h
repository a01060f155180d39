// The per-process backend object: host services, parsed options and the UCP context (which
// transports and memory types this process has). Communicators create their workers from it.
#pragma once

#include <memory>
#include <string>

#include <ucp/api/ucp.h>

#include "commbench/backend.h"
#include "options.h"

struct cb_backend {
  cb_host_services host{};  // the host's services; fields its struct lacks stay zero
  commbench::ucx_backend::UcxOptions options;
  ucp_context_h context = nullptr;
  uint64_t memory_types = 0;  // UCS_BIT(ucs_memory_type_t) the context supports
  cb_capabilities capabilities{};  // runtime_capabilities(), computed once: every op is checked against it
  commbench::ucx_backend::ProgressMode progress = commbench::ucx_backend::ProgressMode::kPolling;
  std::string progress_reason;  // why, when chosen automatically
  std::string net_devices;      // the network devices UCX may use, and why (metadata)
  std::string protocols;        // UCX's protocol implementation, v1 or v2, and why (metadata)
  std::string rndv_scheme;      // UCX_RNDV_SCHEME (get or put), and why (metadata)
  std::string single_copy_segment;  // UCX_SCOPY_SEG_SIZE, and why (metadata)

  cb_backend() = default;
  cb_backend(const cb_backend&) = delete;
  cb_backend& operator=(const cb_backend&) = delete;
  ~cb_backend();

  void log(cb_log_level level, const std::string& message) const;
  bool supports_cuda() const;
};

namespace commbench::ucx_backend {

// Validates the host services and options and creates the UCP context (tag matching, and
// wake-up when progress = wait). UCX_* environment variables apply as usual; options override.
std::unique_ptr<cb_backend> create_backend(const cb_host_services& host);

void emit_metadata(const cb_backend& backend,
                   void (*emit)(void* ctx, const char* key, const char* value), void* ctx);

}  // namespace commbench::ucx_backend
