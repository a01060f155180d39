#include "backend.h"

#include <sched.h>

#include "commbench/sdk/host_services.hpp"
#include "errors.h"

cb_backend::~cb_backend() {
  if (context != nullptr) ucp_cleanup(context);
}

void cb_backend::log(cb_log_level level, const std::string& message) const {
  if (host.log != nullptr) host.log(host.ctx, level, message.c_str());
}

bool cb_backend::supports_cuda() const { return (memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0; }

namespace commbench::ucx_backend {
namespace {

// UCX's configuration object, released on every path.
class Config {
 public:
  Config() { check_ucs("ucp_config_read", ucp_config_read(nullptr, nullptr, &config_)); }
  ~Config() { ucp_config_release(config_); }
  Config(const Config&) = delete;
  Config& operator=(const Config&) = delete;
  void set(const char* name, const std::string& value, const char* option) {
    const ucs_status_t s = ucp_config_modify(config_, name, value.c_str());
    if (s != UCS_OK)
      fail(CB_ERR_INVALID_ARGUMENT, std::string("option ") + option + " = \"" + value +
                                        "\": UCX rejects it for UCX_" + name + " (" +
                                        ucs_status_string(s) + ")");
  }
  ucp_config_t* get() const { return config_; }

 private:
  ucp_config_t* config_ = nullptr;
};

// The progress mode: as asked, or polling unless this host's ranks outnumber its CPUs.
ProgressMode resolve_progress(const UcxOptions& o, int local_world_size, std::string& reason) {
  if (o.progress) return *o.progress;
  cpu_set_t set;
  const int cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  const bool crowded = local_world_size > cpus;
  reason = "auto: " + std::to_string(local_world_size) + " ranks on this host, " +
           std::to_string(cpus) + " CPUs";
  return crowded ? ProgressMode::kWait : ProgressMode::kPolling;
}

ucp_context_h create_context(const UcxOptions& o, ProgressMode progress, int local_world_size) {
  Config config;
  if (!o.transports.empty()) config.set("TLS", o.transports, "transports");
  if (!o.rndv_thresh.empty()) config.set("RNDV_THRESH", o.rndv_thresh, "rndv_thresh");

  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                      UCP_PARAM_FIELD_ESTIMATED_NUM_PPN | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_TAG;
  if (progress == ProgressMode::kWait) params.features |= UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = o.thread_mode == UCS_THREAD_MODE_MULTI ? 1 : 0;
  params.estimated_num_ppn = static_cast<size_t>(local_world_size > 0 ? local_world_size : 1);
  params.name = "commbench";
  ucp_context_h context = nullptr;
  const ucs_status_t s = ucp_init(&params, config.get(), &context);
  if (s != UCS_OK) {
    const std::string tls = o.transports.empty() ? "UCX's default transports" : "transports \"" + o.transports + "\"";
    fail(s == UCS_ERR_NO_ELEM || s == UCS_ERR_NO_DEVICE ? CB_ERR_UNAVAILABLE : status_from_ucs(s),
         std::string("ucp_init: ") + ucs_status_string(s) + " with " + tls +
             " (the transports named are not usable on this host; `ucx_info -d` lists the ones "
             "it has, and UCX_* environment variables of the run also apply)");
  }
  return context;
}

}  // namespace

std::unique_ptr<cb_backend> create_backend(const cb_host_services& given) {
  auto backend = std::make_unique<cb_backend>();
  backend->host = sdk::copy_host_services(given, "ucx");
  backend->options = parse_options(backend->host.options, backend->host.num_options);
  backend->progress = resolve_progress(backend->options, backend->host.local_world_size,
                                       backend->progress_reason);
  backend->context = create_context(backend->options, backend->progress, backend->host.local_world_size);
  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  check_ucs("ucp_context_query", ucp_context_query(backend->context, &attr));
  backend->memory_types = attr.memory_types;
  return backend;
}

void emit_metadata(const cb_backend& backend,
                   void (*emit)(void* ctx, const char* key, const char* value), void* ctx) {
  const UcxOptions& o = backend.options;
  auto put = [&](const char* key, const std::string& value) { emit(ctx, key, value.c_str()); };
  put("ucx_version", ucp_get_version_string());
  put("transports", o.transports.empty() ? "default (UCX_TLS or all)" : o.transports);
  put("thread_mode", std::string(thread_mode_name(o.thread_mode)));
  std::string progress = backend.progress == ProgressMode::kWait ? "wait" : "polling";
  if (!backend.progress_reason.empty()) progress += " (" + backend.progress_reason + ")";
  put("progress", progress);
  put("rndv_thresh", o.rndv_thresh.empty() ? "default" : o.rndv_thresh);
  put("registration", o.registration ? "on" : "off");
  put("error_handling", o.error_handling == ErrorHandling::kPeer ? "peer" : "none");
  put("eager_endpoints_up_to", std::to_string(o.eager_endpoints_up_to));
  put("allreduce_algorithm", std::string(algorithm_name(o.algorithms.allreduce)));
  put("allgather_algorithm", std::string(algorithm_name(o.algorithms.allgather)));
  put("reducescatter_algorithm", std::string(algorithm_name(o.algorithms.reducescatter)));
  put("small_message_threshold", std::to_string(o.algorithms.small_message_bytes));
  put("timeout_ms", std::to_string(o.timeout.count()));
  put("memory_types", backend.supports_cuda()
                          ? "host, cuda"
                          : "host (cuda unsupported: this UCX build's context reports no CUDA "
                            "memory type)");
}

}  // namespace commbench::ucx_backend
