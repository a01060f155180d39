#include "options.h"

#include <array>

#include "commbench/sdk/plugin_options.hpp"
#include "errors.h"
#include "transport_list.h"

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

}  // namespace

// "tcp", "sm,self", "^cma" (everything but cma); names checked one by one so a typo is caught
// here with a clear message instead of as "no usable transports" from deep inside UCX.
std::string parse_transports(std::string_view key, std::string_view value) {
  std::string_view list = value;
  if (!list.empty() && list.front() == '^') list.remove_prefix(1);
  int named = 0;
  for (std::string_view name : split_ucx_list(list)) {
    if (name.empty()) continue;  // "tcp,": UCX skips empty items
    ++named;
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
  }
  if (named == 0)
    bad_option_value(key, value, "a comma-separated UCX_TLS list such as \"tcp\" or \"sm,self\"");
  return std::string(value);
}

Algorithm parse_forced_algorithm(std::string_view key, std::string_view value) {
  const auto a = parse_algorithm(value);
  if (!a) bad_option_value(key, value, "an algorithm name (docs/backends/ucx.md lists them)");
  return *a;
}

std::string_view thread_mode_name(ucs_thread_mode_t mode) {
  for (size_t i = 0; i < std::size(kThreadModes); ++i)
    if (kThreadModes[i] == mode) return kThreadModeNames[i];
  return "?";
}

std::string_view progress_name(ProgressMode mode) {
  for (size_t i = 0; i < std::size(kProgressModes); ++i)
    if (kProgressModes[i] == mode) return kProgressNames[i + 1];
  return "?";
}

UcxOptions parse_options(const cb_option* options, size_t count) {
  UcxOptions parsed;
  sdk::apply_options<UcxOptions>(kOptionTable, "ucx", options, count, parsed);
  validate_choice(parsed.algorithms);
  return parsed;
}

}  // namespace commbench::ucx_backend
