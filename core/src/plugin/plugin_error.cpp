#include "plugin/plugin_error.h"

#include <fmt/format.h>

#include "commbench/sdk/dtypes.hpp"
#include "plugin/plugin_info.h"

namespace commbench {

std::string status_name(cb_status status) {
  switch (status) {
    case CB_OK: return "ok";
    case CB_ERR_UNIMPLEMENTED: return "unimplemented";
    case CB_ERR_UNAVAILABLE: return "unavailable";
    case CB_ERR_INVALID_ARGUMENT: return "invalid argument";
    case CB_ERR_TIMEOUT: return "timeout";
    case CB_ERR_RESOURCE_EXHAUSTED: return "resource exhausted";
    case CB_ERR_INTERNAL: return "internal";
    case CB_ERR_REMOTE: return "remote";
  }
  return fmt::format("status {}", sdk::abi_value(status));
}

PluginError::PluginError(cb_status status, std::string plugin, std::string operation,
                         std::string message)
    : std::runtime_error(fmt::format("backend '{}': {} failed ({}): {}", plugin, operation,
                                     status_name(status), message)),
      status_(status),
      plugin_(std::move(plugin)),
      operation_(std::move(operation)),
      plugin_message_(std::move(message)) {}

cb_status plugin_error_status(const cb_backend_api& api, const cb_error* error, int32_t* raw) {
  const int32_t code = sdk::abi_value(api.error_code(error));
  if (raw) *raw = code;
  // A plugin that reports an error with code CB_OK broke the contract; do not let it pass as success.
  const auto known = sdk::abi_enum<cb_status>(code, CB_ERR_REMOTE + 1);
  return known && *known != CB_OK ? *known : CB_ERR_INTERNAL;
}

void throw_plugin_error(const cb_backend_api& api, cb_error* error, const char* what) {
  int32_t raw = 0;
  const cb_status status = plugin_error_status(api, error, &raw);
  const char* text = api.error_message(error);
  // Copy before error_destroy: the message lives inside the error object.
  std::string message = text != nullptr && *text != '\0' ? text : "(the plugin gave no message)";
  if (!sdk::abi_enum<cb_status>(raw, CB_ERR_REMOTE + 1))
    message += fmt::format(" (the plugin's status code {} is unknown to this build: taken as internal)", raw);
  else if (raw == CB_OK)
    message += " (the plugin returned an error whose status is CB_OK, which no error may have: taken as internal)";
  api.error_destroy(error);
  throw PluginError(status, api.name ? api.name : "?", what, std::move(message));
}

cb_capabilities query_capabilities(const cb_backend_api& api, const cb_backend* backend) {
  cb_capabilities caps{};
  caps.struct_size = kCapabilitiesStructSize;
  check(api, api.get_capabilities(backend, &caps), "get_capabilities");
  // The plugin must leave struct_size alone; restore it in case it wrote its own size there.
  caps.struct_size = kCapabilitiesStructSize;
  return caps;
}

}  // namespace commbench
