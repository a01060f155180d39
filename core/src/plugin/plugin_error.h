// Turning the plugin's C error objects into C++ exceptions, in the worker.
// The C ABI returns a plugin-allocated cb_error*; check() reads its code and message, frees it
// with the plugin's own error_destroy (never ours: the plugin may use another allocator) and
// throws PluginError, so the worker code reads like ordinary C++.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "commbench/backend.h"

namespace commbench {

// A cb_status as text: "unimplemented", "unavailable", ...
std::string status_name(cb_status status);

class PluginError : public std::runtime_error {
 public:
  // `operation`: the ABI function that failed ("comm_create"); `message`: the plugin's text.
  PluginError(cb_status status, std::string plugin, std::string operation, std::string message);

  cb_status status() const { return status_; }
  const std::string& plugin() const { return plugin_; }
  const std::string& operation() const { return operation_; }
  const std::string& plugin_message() const { return plugin_message_; }

  // What the core does with a status (docs/plugin-abi.md, "Error codes").
  bool skips_case() const { return status_ == CB_ERR_UNIMPLEMENTED; }
  bool skips_backend() const { return status_ == CB_ERR_UNAVAILABLE; }

 private:
  cb_status status_;
  std::string plugin_;
  std::string operation_;
  std::string plugin_message_;
};

// The code of a plugin's error, read as an integer and range-checked before it becomes a
// cb_status (a code from a newer plugin must not be loaded as the enum: undefined behaviour).
// An unknown code, or CB_OK on an error, is CB_ERR_INTERNAL; `raw` gets the plugin's number.
cb_status plugin_error_status(const cb_backend_api& api, const cb_error* error, int32_t* raw = nullptr);

// Consumes a non-NULL error (error_destroy) and throws PluginError with `what` as the operation.
[[noreturn, gnu::cold]] void throw_plugin_error(const cb_backend_api& api, cb_error* error, const char* what);

// No-op when `error` is NULL. Otherwise consumes the error (error_destroy) and throws PluginError
// with `what` as the operation, e.g. check(api, api.init(&host, &backend), "init"). Inline: every
// timed op passes here.
inline void check(const cb_backend_api& api, cb_error* error, const char* what) {
  if (error != nullptr) [[unlikely]] throw_plugin_error(api, error, what);
}

// The plugin's capabilities: a zeroed struct with struct_size set to this build's size, so a
// plugin built against an older minor fills only the fields it knows and the rest read as 0.
// backend == NULL asks for the static set (callable before init, touches no hardware).
cb_capabilities query_capabilities(const cb_backend_api& api, const cb_backend* backend);

}  // namespace commbench
