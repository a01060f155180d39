#include "errors.h"

#include <gloo/common/error.h>
#include <gloo/common/logging.h>

#include "host_resources.h"

namespace commbench::gloo_backend {
namespace {

using sdk::join_message;
using sdk::make_error;

// gloo words its deadlines "Timed out waiting ...", "Read timeout ...", "Connect timeout ...",
// and "Application timeout caused pair closure" (a timeout elsewhere closed this pair).
bool is_timeout_message(std::string_view message) {
  return message.find("Timed out") != std::string_view::npos ||
         message.find("timeout") != std::string_view::npos;
}

}  // namespace

cb_error* error_from_current_exception(std::string_view what) noexcept {
  try {
    throw;
  } catch (const gloo::Exception& e) {
    // Out of ports or descriptors, whichever kind gloo threw: say so, rather than blaming a
    // peer or a timeout (issue 28 §13).
    if (const std::string hint = resource_exhaustion_hint(e.what()); !hint.empty())
      return make_error(CB_ERR_RESOURCE_EXHAUSTED, join_message(what, e.what(), hint));
  } catch (...) {
  }
  try {
    throw;
  } catch (const gloo::IoException& e) {
    // gloo reports both deadlines and broken connections as IoException; only the text
    // tells them apart. After either, gloo has closed every pair of the context.
    if (is_timeout_message(e.what()))
      return make_error(CB_ERR_TIMEOUT,
                        join_message(what, e.what(),
                                     "a peer did not take part within the timeout; check that "
                                     "every rank posts the same ops, or raise the gloo option "
                                     "timeout_ms"));
    return make_error(CB_ERR_REMOTE,
                      join_message(what, e.what(),
                                   "a connection to a peer failed; the peer probably exited, "
                                   "see its log"));
  } catch (const gloo::InvalidOperationException& e) {
    return make_error(CB_ERR_INVALID_ARGUMENT, join_message(what, e.what()));
  } catch (const gloo::EnforceNotMet& e) {
    return make_error(CB_ERR_INTERNAL,
                      join_message(what, e.what(), "a libgloo consistency check failed"));
  } catch (const gloo::Exception& e) {
    return make_error(CB_ERR_INTERNAL, join_message(what, e.what()));
  } catch (...) {
    return sdk::error_from_standard_exception(what);
  }
}

}  // namespace commbench::gloo_backend
