// UCX's side of error reporting: the SDK (commbench/sdk/plugin_error.hpp) supplies the ABI's
// error objects (and plugin_entry.hpp the ABI wrappers); this file says what a ucs_status_t means for the core.
#pragma once

#include <string>
#include <string_view>

#include <ucs/type/status.h>

#include "commbench/sdk/plugin_error.hpp"

namespace commbench::ucx_backend {

using sdk::fail;
using sdk::PluginError;

// The core's reading of a UCX status: deadlines, dead peers, exhausted resources, bad input.
cb_status status_from_ucs(ucs_status_t status);

// Throws PluginError for a failed UCX call: "<call>: <ucs_status_string> (<hint>)".
[[noreturn]] void fail_ucs(std::string_view call, ucs_status_t status, std::string_view hint = {});

inline void check_ucs(std::string_view call, ucs_status_t status, std::string_view hint = {}) {
  if (status != UCS_OK) fail_ucs(call, status, hint);
}

}  // namespace commbench::ucx_backend
