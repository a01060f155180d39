// The per-process backend object: host services, parsed options, and the TCP device that
// every communicator of this backend connects through.
#pragma once

#include <memory>
#include <string>

#include <gloo/transport/device.h>

#include "commbench/backend.h"
#include "options.h"

struct cb_backend {
  cb_host_services host{};  // the host's services; fields its struct lacks stay zero
  commbench::gloo_backend::GlooOptions options;
  std::shared_ptr<gloo::transport::Device> device;

  void log(cb_log_level level, const std::string& message) const;
};

namespace commbench::gloo_backend {

// Validates the host services and options and creates the TCP device. Several backends may
// exist in one process (each with its own device): the in-process test harness relies on it.
std::unique_ptr<cb_backend> create_backend(const cb_host_services& host);

void emit_metadata(const cb_backend& backend,
                   void (*emit)(void* ctx, const char* key, const char* value), void* ctx);

}  // namespace commbench::gloo_backend
