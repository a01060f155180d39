// Error objects of the ABI for C++ plugins, and the one place where C++ exceptions become them.
// Header-only plugin SDK: a plugin may use it; the ABI (backend.h) does not depend on it.
//
// No exception may cross the C ABI: every exported function runs its body through a guard
// (EntryPoints::guarded in plugin_entry.hpp) that turns whatever was thrown into a cb_error with
// a status the core acts on and a message a user acts on. A plugin with its own exception types (gloo::IoException, ucs_status_t...)
// catches those first and hands everything else to error_from_standard_exception().
#pragma once

#include <new>
#include <stdexcept>
#include <string>
#include <string_view>

#include "commbench/backend.h"

// The ABI's opaque error type. Each plugin is its own shared object with hidden symbols, so
// every plugin that includes this header has its own (identical) definition.
struct cb_error {
  cb_status code;
  std::string message;
  bool is_static = false;  // the preallocated out-of-memory error: never deleted
};

namespace commbench::sdk {

// What a plugin throws for an error it diagnosed itself.
class PluginError : public std::runtime_error {
 public:
  PluginError(cb_status code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  cb_status code() const noexcept { return code_; }

 private:
  cb_status code_;
};

[[noreturn]] inline void fail(cb_status code, const std::string& message) {
  throw PluginError(code, message);
}

// "what: detail (hint)"
inline std::string join_message(std::string_view what, std::string_view detail,
                                std::string_view hint = {}) {
  std::string message;
  message.reserve(what.size() + detail.size() + hint.size() + 4);
  message.append(what).append(": ").append(detail);
  if (!hint.empty()) message.append(" (").append(hint).append(")");
  return message;
}

namespace detail {
// Returned when even the error object cannot be allocated; destroy_error skips it.
inline cb_error out_of_memory_error{CB_ERR_RESOURCE_EXHAUSTED,
                                    "plugin out of memory while reporting an error", true};
}  // namespace detail

// Allocates an error; never throws (falls back to a static out-of-memory error).
inline cb_error* make_error(cb_status code, std::string_view message) noexcept {
  try {
    return new cb_error{code, std::string(message), false};
  } catch (...) {
    return &detail::out_of_memory_error;
  }
}

inline void destroy_error(cb_error* error) noexcept {
  if (error != nullptr && !error->is_static) delete error;
}

// Translates the exception being handled (PluginError, std::bad_alloc, std::exception,
// anything) into an error whose message starts with `what`. Call only inside a catch block.
inline cb_error* error_from_standard_exception(std::string_view what) noexcept {
  try {
    throw;
  } catch (const PluginError& e) {
    return make_error(e.code(), join_message(what, e.what()));
  } catch (const std::bad_alloc&) {
    return make_error(CB_ERR_RESOURCE_EXHAUSTED,
                      join_message(what, "out of host memory",
                                   "try smaller sizes or fewer ranks per host"));
  } catch (const std::exception& e) {
    return make_error(CB_ERR_INTERNAL, join_message(what, e.what()));
  } catch (...) {
    return make_error(CB_ERR_INTERNAL, join_message(what, "unknown C++ exception"));
  }
}

// For the ABI's pointer arguments: a NULL where one is required is the caller's bug, reported.
inline void require_argument(const void* pointer, const char* name) {
  if (pointer == nullptr) fail(CB_ERR_INVALID_ARGUMENT, std::string(name) + " is NULL");
}

}  // namespace commbench::sdk
