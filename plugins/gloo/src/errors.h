// Error objects of the ABI and the one place where C++ exceptions become them.
// No exception may cross the C ABI: every exported function runs its body through
// `guarded()`, which turns whatever was thrown (ours, gloo's, the standard library's)
// into a cb_error with a status code the core can act on and a message a user can act on.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "commbench/backend.h"

// The ABI's opaque error type, defined by this plugin.
struct cb_error {
  cb_status code;
  std::string message;
  bool is_static = false;  // the preallocated out-of-memory error: never deleted
};

namespace commbench::gloo_backend {

// What the plugin throws for an error it diagnosed itself.
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

// Allocates an error; never throws (falls back to a static out-of-memory error).
cb_error* make_error(cb_status code, std::string_view message) noexcept;

// Translates the exception being handled into an error whose message starts with `what`
// (e.g. "gloo allreduce"). Call only from inside a catch block.
cb_error* error_from_current_exception(std::string_view what) noexcept;

// Runs `body` and reports anything it throws as a cb_error; nullptr on success.
template <class Body>
cb_error* guarded(std::string_view what, Body&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (...) {
    return error_from_current_exception(what);
  }
}

void destroy_error(cb_error* error) noexcept;

}  // namespace commbench::gloo_backend
