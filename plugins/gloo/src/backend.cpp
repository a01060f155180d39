#include "backend.h"

#include <gloo/config.h>
#include <gloo/transport/tcp/device.h>

#include "commbench/sdk/host_reduce.hpp"
#include "commbench/sdk/host_services.hpp"
#include "errors.h"

void cb_backend::log(cb_log_level level, const std::string& message) const {
  if (host.log != nullptr) host.log(host.ctx, level, message.c_str());
}

namespace commbench::gloo_backend {
namespace {

std::shared_ptr<gloo::transport::Device> create_tcp_device(const GlooOptions& options) {
  gloo::transport::tcp::attr attr;
  attr.hostname = options.hostname;
  attr.iface = options.iface;
  try {
    return gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    const std::string where = options.iface.empty() ? "hostname '" + options.hostname + "'"
                                                    : "interface '" + options.iface + "'";
    fail(CB_ERR_INVALID_ARGUMENT,
         "gloo cannot create a TCP device on " + where + ": " + e.what() +
             "; set the gloo option hostname to an address of this host, or iface to one of "
             "its interfaces (see `ip addr`)");
  }
}

}  // namespace

std::unique_ptr<cb_backend> create_backend(const cb_host_services& given) {
  auto backend = std::make_unique<cb_backend>();
  backend->host = sdk::copy_host_services(given, "gloo");
  backend->options = parse_options(backend->host.options, backend->host.num_options);
  backend->device = create_tcp_device(backend->options);
  backend->log(CB_LOG_DEBUG, "gloo: TCP device " + backend->device->str() + ", allreduce algorithm " +
                                 std::string(algorithm_name(backend->options.allreduce_algorithm)));
  return backend;
}

void emit_metadata(const cb_backend& backend,
                   void (*emit)(void* ctx, const char* key, const char* value), void* ctx) {
  const GlooOptions& o = backend.options;
  const std::string version = std::to_string(GLOO_VERSION_MAJOR) + "." +
                              std::to_string(GLOO_VERSION_MINOR) + "." +
                              std::to_string(GLOO_VERSION_PATCH);
  emit(ctx, "gloo_version", version.c_str());
  emit(ctx, "transport", o.transport.c_str());
  emit(ctx, "hostname", o.hostname.c_str());
  emit(ctx, "iface", o.iface.c_str());
  emit(ctx, "allreduce_algorithm", std::string(algorithm_name(o.allreduce_algorithm)).c_str());
  emit(ctx, "timeout_ms", std::to_string(o.timeout.count()).c_str());
  emit(ctx, "host_reduction", sdk::reduce_kernel_name(sdk::ReduceIsa::Baseline));
  if (backend.device) emit(ctx, "device", backend.device->str().c_str());
}

}  // namespace commbench::gloo_backend
