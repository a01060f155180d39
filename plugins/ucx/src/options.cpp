#include "options.h"

#include <array>

#include "commbench/sdk/plugin_options.hpp"
#include "errors.h"

namespace commbench::ucx_backend {
namespace {

using sdk::bad_option_value;

// Transport and alias names UCX 1.x accepts in UCX_TLS (builds differ in which are present;
// one that is known but not built here fails at context creation with its own message).
constexpr std::array<std::string_view, 33> kTransportNames = {
    "all",     "self",     "sm",       "shm",     "mm",        "posix",     "sysv",
    "cma",     "knem",     "xpmem",    "tcp",     "ib",        "rc",        "rc_v",
    "rc_x",    "rc_verbs", "rc_mlx5",  "ud",      "ud_v",      "ud_x",      "ud_verbs",
    "ud_mlx5", "dc",       "dc_x",     "dc_mlx5", "cuda",      "cuda_copy", "cuda_ipc",
    "gdr_copy", "rocm",    "rocm_copy", "rocm_ipc", "ugni"};

// "tcp", "sm,self", "^cma" (everything but cma); names checked one by one so a typo is caught
// here with a clear message instead of as "no usable transports" from deep inside UCX.
std::string parse_transports(std::string_view key, std::string_view value) {
  std::string_view list = value;
  if (!list.empty() && list.front() == '^') list.remove_prefix(1);
  if (list.empty())
    bad_option_value(key, value, "a comma-separated UCX_TLS list such as \"tcp\" or \"sm,self\"");
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    bool known = false;
    for (std::string_view k : kTransportNames) known |= (k == name);
    if (!known) {
      std::string all;
      for (std::string_view k : kTransportNames) all.append(all.empty() ? "" : ", ").append(k);
      fail(CB_ERR_INVALID_ARGUMENT, "option " + std::string(key) + " = \"" + std::string(value) +
                                        "\": unknown UCX transport '" + std::string(name) +
                                        "'; UCX transports are: " + all +
                                        " (`ucx_info -d` lists the ones this host has)");
    }
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  return std::string(value);
}

ucs_thread_mode_t parse_thread_mode(std::string_view key, std::string_view value) {
  for (ucs_thread_mode_t m : {UCS_THREAD_MODE_SINGLE, UCS_THREAD_MODE_SERIALIZED,
                              UCS_THREAD_MODE_MULTI})
    if (thread_mode_name(m) == value) return m;
  bad_option_value(key, value, "one of single, serialized, multi");
}

Algorithm parse_forced_algorithm(std::string_view key, std::string_view value) {
  const auto a = parse_algorithm(value);
  if (!a) bad_option_value(key, value, "an algorithm name (docs/backends/ucx.md lists them)");
  return *a;
}

}  // namespace

std::string_view thread_mode_name(ucs_thread_mode_t mode) {
  switch (mode) {
    case UCS_THREAD_MODE_SINGLE: return "single";
    case UCS_THREAD_MODE_SERIALIZED: return "serialized";
    case UCS_THREAD_MODE_MULTI: return "multi";
    default: return "?";
  }
}

UcxOptions parse_options(const cb_option* options, size_t count) {
  UcxOptions parsed;
  sdk::for_each_option(options, count, [&](std::string_view key, std::string_view value) {
    if (key == "transports") {
      parsed.transports = parse_transports(key, value);
    } else if (key == "thread_mode") {
      parsed.thread_mode = parse_thread_mode(key, value);
    } else if (key == "progress") {
      if (value == "polling") parsed.progress = ProgressMode::kPolling;
      else if (value == "wait") parsed.progress = ProgressMode::kWait;
      else if (value == "auto") parsed.progress.reset();
      else bad_option_value(key, value, "auto, polling or wait");
    } else if (key == "rndv_thresh") {
      parsed.rndv_thresh = value == "auto" ? std::string(value)
                                           : std::to_string(sdk::parse_bytes_option(key, value));
    } else if (key == "registration") {
      parsed.registration = sdk::parse_bool_option(key, value);
    } else if (key == "error_handling") {
      if (value == "peer") parsed.error_handling = ErrorHandling::kPeer;
      else if (value == "none") parsed.error_handling = ErrorHandling::kNone;
      else bad_option_value(key, value, "peer or none");
    } else if (key == "eager_endpoints_up_to") {
      parsed.eager_endpoints_up_to = static_cast<int>(sdk::parse_integer_option(
          key, value, 0, INT32_MAX, "a number of ranks (0: always connect on first use)"));
    } else if (key == "allreduce_algorithm") {
      parsed.algorithms.allreduce = parse_forced_algorithm(key, value);
    } else if (key == "allgather_algorithm") {
      parsed.algorithms.allgather = parse_forced_algorithm(key, value);
    } else if (key == "reducescatter_algorithm") {
      parsed.algorithms.reducescatter = parse_forced_algorithm(key, value);
    } else if (key == "small_message_threshold") {
      parsed.algorithms.small_message_bytes = sdk::parse_bytes_option(key, value);
    } else if (key == "timeout_ms") {
      parsed.timeout = std::chrono::milliseconds(sdk::parse_integer_option(
          key, value, 1, INT32_MAX, "a positive number of milliseconds, e.g. \"60000\""));
    } else {
      sdk::unknown_option("ucx", key,
                          {"transports", "thread_mode", "progress", "rndv_thresh",
                           "registration", "error_handling", "eager_endpoints_up_to",
                           "allreduce_algorithm", "allgather_algorithm",
                           "reducescatter_algorithm", "small_message_threshold", "timeout_ms"});
    }
  });
  validate_choice(parsed.algorithms);
  return parsed;
}

}  // namespace commbench::ucx_backend
