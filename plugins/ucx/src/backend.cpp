#include "backend.h"

#include <sched.h>

#include <cstdlib>
#include <strings.h>
#include <string_view>

#include <uct/api/uct.h>

#include "commbench/sdk/host_reduce.hpp"
#include "commbench/sdk/host_services.hpp"
#include "capabilities.h"
#include "errors.h"
#include "transport_list.h"

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

// The progress mode: as asked; polling while this host's ranks fit on its CPUs; yielding when
// they outnumber them, as Open MPI does (bench/run_ucx_progress_cost.sh: 4 ranks on 2 CPUs, 8 B
// allreduce 16 us yielding vs 73 us waiting on a quiet host, and two CPU-bound jobs beside it
// slowed 1.10x vs 1.94x; waiting keeps small messages near 150 us under such load, where
// yielding ranks wait milliseconds for their turn, but those numbers are flagged busy anyway).
// A rank the host bound to CPUs of its own (CB_HOST_OWN_CPUS) counts them as its alone: its
// affinity then shows only its share, which the host's ranks would otherwise seem to crowd.
ProgressMode resolve_progress(const UcxOptions& o, const cb_host_services& host, std::string& reason) {
  if (o.progress) return *o.progress;
  const int local_world_size = host.local_world_size;
  if (host.flags & CB_HOST_OWN_CPUS) {
    reason = "auto: bound to CPUs of its own (cpu_binding), " + std::to_string(local_world_size) +
             " ranks on this host";
    return ProgressMode::kPolling;
  }
  cpu_set_t set;
  const int cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  const bool crowded = local_world_size > cpus;
  reason = "auto: " + std::to_string(local_world_size) + " ranks on this host, " +
           std::to_string(cpus) + " CPUs";
  return crowded ? ProgressMode::kYield : ProgressMode::kPolling;
}

// The UCX_TLS list this context is made with: the option, else the environment's (UCX also reads
// its config files, which this does not see).
std::string effective_tls(const UcxOptions& o) {
  if (!o.transports.empty()) return o.transports;
  const char* env = std::getenv("UCX_TLS");
  return env != nullptr ? env : "";
}

// Network devices for this context. When every rank runs on this host, nothing needs the network:
// UCX is kept to loopback (and shared memory, which is no network device), so that no worker
// listens on the host's external interfaces (UCX's TCP transport listens on every device it
// uses). UCX_NET_DEVICES, or transports naming an RDMA transport, leave the choice to the user.
std::string choose_net_devices(const UcxOptions& o, const cb_host_services& host, Config& config) {
  if (const char* devices = std::getenv("UCX_NET_DEVICES")) return std::string("UCX_NET_DEVICES=") + devices;
  const std::string tls = effective_tls(o);
  if (host.local_world_size < host.world_size) return "UCX's default (ranks on several hosts)";
  if (names_rdma_transport(tls)) return "UCX's default (RDMA transports \"" + tls + "\" asked for)";
  config.set("NET_DEVICES", "lo", "transports");
  return "lo (every rank on this host; set UCX_NET_DEVICES to choose others)";
}

// Sets UCX_<variable> to `value` when the option chose one (non-null) and says where the
// context's setting comes from (metadata): the option, the environment, or UCX's default.
std::string apply_choice(Config& config, const char* variable, const char* option, const char* choice,
                         const char* value, const char* shown, const char* ucx_default) {
  if (value != nullptr) {
    config.set(variable, value, option);
    return std::string(shown) + " (" + option + " = \"" + choice + "\")";
  }
  const std::string env_name = std::string("UCX_") + variable;
  if (const char* env = std::getenv(env_name.c_str())) return env_name + "=" + env;
  return ucx_default;
}

// UCX_PROTO_ENABLE for this context, and why.
std::string choose_protocols(const UcxOptions& o, Config& config) {
  static constexpr const char* kValue[] = {nullptr, "n", "y"};  // indexed by Protocols
  static constexpr const char* kShown[] = {nullptr, "v1", "v2"};
  static_assert(std::size(kValue) == std::size(kProtocolChoices) && std::size(kShown) == std::size(kValue));
  const auto i = static_cast<size_t>(o.protocols);
  return apply_choice(config, "PROTO_ENABLE", "protocols", kProtocolsNames[i], kValue[i], kShown[i],
                      "UCX's default (v1 before UCX 1.16, v2 from it)");
}

// UCX_RNDV_SCHEME for this context, and why. It decides protocol v1's rendezvous; v2 chooses per
// message from its own estimates, among the operations this leaves enabled.
std::string choose_rndv_scheme(const UcxOptions& o, Config& config) {
  static constexpr const char* kValue[] = {nullptr, "get_zcopy", "put_zcopy"};  // indexed by RndvScheme
  static_assert(std::size(kValue) == std::size(kRndvSchemeChoices));
  const auto i = static_cast<size_t>(o.rndv_scheme);
  return apply_choice(config, "RNDV_SCHEME", "rndv_scheme", kRndvSchemeNames[i], kValue[i], kValue[i],
                      "UCX's default (auto: get_zcopy for host memory)");
}

// Whether this context will open one of UCX's single-copy shared-memory transports (cma, knem):
// their components list a memory domain only where the kernel allows them (CMA needs ptrace
// rights over the peer, knem its module). UCX warns about a setting no transport took.
bool uses_single_copy_transport(std::string_view tls) {
  uct_component_h* components = nullptr;
  unsigned count = 0;
  if (uct_query_components(&components, &count) != UCS_OK) return false;
  bool used = false;
  for (unsigned i = 0; i < count && !used; ++i) {
    uct_component_attr_t attr{};
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    if (uct_component_query(components[i], &attr) != UCS_OK) continue;
    const std::string_view name(attr.name);
    used = (name == "cma" || name == "knem") && attr.md_resource_count > 0 && tls_allows(tls, name);
  }
  uct_release_component_list(components);
  return used;
}

// UCX_SCOPY_SEG_SIZE for this context, and why. UCX's single-copy transports move a rendezvous
// message in pieces of 512 KiB by default, one system call each; Open MPI's shared-memory path
// reads a message in one call, and so does commbench by default, measurably faster on one node
// (docs/performance-ucx-mpi.md, "One process_vm_readv per message"). Pieces would matter for
// fairness among many peers' transfers. Any of the environment's spellings leaves it to UCX.
std::string choose_single_copy_segment(const UcxOptions& o, std::string_view tls, Config& config) {
  if (!o.single_copy_segment)
    for (const char* env : {"UCX_SCOPY_SEG_SIZE", "UCX_CMA_SEG_SIZE", "UCX_KNEM_SEG_SIZE"})
      if (const char* value = std::getenv(env)) return std::string(env) + "=" + value;
  if (!uses_single_copy_transport(tls))
    return "unused (no single-copy transport, cma or knem, is usable here or allowed by the transports)";
  const size_t bytes = o.single_copy_segment.value_or(0);
  const std::string value = bytes == 0 ? "inf" : std::to_string(bytes);
  config.set("SCOPY_SEG_SIZE", value, "single_copy_segment");
  if (o.single_copy_segment) return value + " (single_copy_segment = \"" + std::to_string(bytes) + "\")";
  return "inf (commbench's default: one process_vm_readv per message; UCX's is 512K)";
}

ucp_context_h create_context(const UcxOptions& o, ProgressMode progress, const cb_host_services& host,
                             std::string& net_devices, std::string& protocols, std::string& rndv_scheme,
                             std::string& single_copy_segment) {
  const int local_world_size = host.local_world_size;
  Config config;
  if (!o.transports.empty()) config.set("TLS", o.transports, "transports");
  net_devices = choose_net_devices(o, host, config);
  if (!o.rndv_thresh.empty()) config.set("RNDV_THRESH", o.rndv_thresh, "rndv_thresh");
  protocols = choose_protocols(o, config);
  rndv_scheme = choose_rndv_scheme(o, config);
  single_copy_segment = choose_single_copy_segment(o, effective_tls(o), config);

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
  backend->progress = resolve_progress(backend->options, backend->host, backend->progress_reason);
  backend->context = create_context(backend->options, backend->progress, backend->host, backend->net_devices,
                                    backend->protocols, backend->rndv_scheme, backend->single_copy_segment);
  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  check_ucs("ucp_context_query", ucp_context_query(backend->context, &attr));
  backend->memory_types = attr.memory_types;
  backend->capabilities = runtime_capabilities(*backend);
  return backend;
}

void emit_metadata(const cb_backend& backend,
                   void (*emit)(void* ctx, const char* key, const char* value), void* ctx) {
  const UcxOptions& o = backend.options;
  auto put = [&](const char* key, const std::string& value) { emit(ctx, key, value.c_str()); };
  put("ucx_version", ucp_get_version_string());
  put("transports", o.transports.empty() ? "default (UCX_TLS or all)" : o.transports);
  put("net_devices", backend.net_devices);
  put("thread_mode", std::string(thread_mode_name(o.thread_mode)));
  std::string progress(progress_name(backend.progress));
  if (!backend.progress_reason.empty()) progress += " (" + backend.progress_reason + ")";
  put("progress", progress);
  put("rndv_thresh", o.rndv_thresh.empty() ? "default" : o.rndv_thresh);
  put("protocols", backend.protocols);
  put("rndv_scheme", backend.rndv_scheme);
  put("single_copy_segment", backend.single_copy_segment);
  put("registration", o.registration ? "on" : "off");
  put("error_handling", o.error_handling == ErrorHandling::kPeer ? "peer" : "none");
  put("eager_endpoints_up_to", std::to_string(o.eager_endpoints_up_to));
  // What was done, not the option: communicator.cpp primes only when endpoints connect eagerly.
  put("prime_messages", o.connects_eagerly(backend.host.world_size)
                            ? std::to_string(o.prime_messages)
                            : "0 (endpoints connect lazily above eager_endpoints_up_to ranks: nothing primed)");
  put("allreduce_algorithm", std::string(algorithm_name(o.algorithms.allreduce)));
  put("allgather_algorithm", std::string(algorithm_name(o.algorithms.allgather)));
  put("reducescatter_algorithm", std::string(algorithm_name(o.algorithms.reducescatter)));
  put("small_message_threshold",
      o.algorithms.small_message_bytes
          ? std::to_string(*o.algorithms.small_message_bytes)
          : "unset (allreduce " + std::to_string(small_message_bytes(CB_OP_ALLREDUCE, o.algorithms)) +
                ", reducescatter " + std::to_string(small_message_bytes(CB_OP_REDUCESCATTER, o.algorithms)) + ")");
  put("ring_threshold", std::to_string(o.algorithms.ring_bytes));
  put("host_reduction", sdk::reduce_kernel_name(sdk::ReduceIsa::Widest));
  put("ring_segment", std::to_string(o.algorithms.segment_bytes));
  // Given a rendezvous threshold (the option, else UCX_RNDV_THRESH; UCX reads "auto" in any
  // case), protocol v1 uses it for fast-completion sends too: they change no protocol.
  const char* env_thresh = std::getenv("UCX_RNDV_THRESH");
  const std::string thresh = !o.rndv_thresh.empty() ? o.rndv_thresh : env_thresh ? env_thresh : "";
  std::string eager = std::to_string(o.allreduce_eager_up_to);
  if (o.allreduce_eager_up_to > 0 && !thresh.empty() && strcasecmp(thresh.c_str(), "auto") != 0)
    eager += " (no protocol change: rndv_thresh decides eager or rendezvous for these sends too)";
  put("allreduce_eager_up_to", eager);
  put("timeout_ms", std::to_string(o.timeout.count()));
  put("memory_types", backend.supports_cuda()
                          ? "host, cuda"
                          : "host (cuda unsupported: this UCX build's context reports no CUDA "
                            "memory type)");
}

}  // namespace commbench::ucx_backend
