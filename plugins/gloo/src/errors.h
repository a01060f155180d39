// Gloo's side of error reporting: the SDK (commbench/sdk/plugin_error.hpp) supplies the ABI's
// error objects (and plugin_entry.hpp the ABI wrappers); this file adds what gloo's own exceptions mean.
#pragma once

#include <string_view>

#include "commbench/sdk/plugin_error.hpp"

namespace commbench::gloo_backend {

using sdk::fail;
using sdk::PluginError;

// Translates the exception being handled (gloo's, ours, the standard library's) into an error
// whose message starts with `what` (e.g. "gloo allreduce"). Call only inside a catch block.
cb_error* error_from_current_exception(std::string_view what) noexcept;

}  // namespace commbench::gloo_backend
