#include "errors.h"

#include <new>

#include <gloo/common/error.h>
#include <gloo/common/logging.h>

namespace commbench::gloo_backend {
namespace {

// Returned when even the error object cannot be allocated; error_destroy skips it.
cb_error kOutOfMemory{CB_ERR_RESOURCE_EXHAUSTED,
                      "gloo plugin: out of memory while reporting an error", true};

// gloo words its deadlines "Timed out waiting ...", "Read timeout ...", "Connect timeout ...",
// and "Application timeout caused pair closure" (a timeout elsewhere closed this pair).
bool is_timeout_message(std::string_view message) {
  return message.find("Timed out") != std::string_view::npos ||
         message.find("timeout") != std::string_view::npos;
}

std::string join(std::string_view what, std::string_view detail, std::string_view hint = {}) {
  std::string message;
  message.reserve(what.size() + detail.size() + hint.size() + 4);
  message.append(what).append(": ").append(detail);
  if (!hint.empty()) message.append(" (").append(hint).append(")");
  return message;
}

}  // namespace

cb_error* make_error(cb_status code, std::string_view message) noexcept {
  try {
    return new cb_error{code, std::string(message), false};
  } catch (...) {
    return &kOutOfMemory;
  }
}

cb_error* error_from_current_exception(std::string_view what) noexcept {
  try {
    throw;
  } catch (const PluginError& e) {
    return make_error(e.code(), join(what, e.what()));
  } catch (const gloo::IoException& e) {
    // gloo reports both deadlines and broken connections as IoException; only the text
    // tells them apart. After either, gloo has closed every pair of the context.
    if (is_timeout_message(e.what()))
      return make_error(CB_ERR_TIMEOUT,
                        join(what, e.what(),
                             "a peer did not take part within the timeout; check that every "
                             "rank posts the same ops, or raise the gloo option timeout_ms"));
    return make_error(CB_ERR_REMOTE,
                      join(what, e.what(),
                           "a connection to a peer failed; the peer probably exited, see its log"));
  } catch (const gloo::InvalidOperationException& e) {
    return make_error(CB_ERR_INVALID_ARGUMENT, join(what, e.what()));
  } catch (const gloo::EnforceNotMet& e) {
    return make_error(CB_ERR_INTERNAL, join(what, e.what(), "a libgloo consistency check failed"));
  } catch (const gloo::Exception& e) {
    return make_error(CB_ERR_INTERNAL, join(what, e.what()));
  } catch (const std::bad_alloc&) {
    return make_error(CB_ERR_RESOURCE_EXHAUSTED,
                      join(what, "out of host memory", "try smaller sizes or fewer ranks per host"));
  } catch (const std::exception& e) {
    return make_error(CB_ERR_INTERNAL, join(what, e.what()));
  } catch (...) {
    return make_error(CB_ERR_INTERNAL, join(what, "unknown C++ exception"));
  }
}

void destroy_error(cb_error* error) noexcept {
  if (error != nullptr && !error->is_static) delete error;
}

}  // namespace commbench::gloo_backend
