// The exported function table: the ABI boundary. The SDK's EntryPoints supplies the wrappers
// every plugin shares (argument checks, exceptions to cb_error); what is gloo's own is the
// traits below and the teardown functions.
#include <memory>
#include <string_view>

#include "backend.h"
#include "capabilities.h"
#include "commbench/backend.h"
#include "commbench/sdk/plugin_entry.hpp"
#include "communicator.h"
#include "errors.h"
#include "options.h"
#include "p2p.h"
#include "post.h"
#include "request.h"

#ifndef COMMBENCH_GLOO_PLUGIN_VERSION
#define COMMBENCH_GLOO_PLUGIN_VERSION "0.0.0"
#endif

namespace {

using namespace commbench::gloo_backend;

struct GlooTraits {
  static constexpr const char* name = "gloo";
  static cb_error* translate(std::string_view what) noexcept { return error_from_current_exception(what); }
  // The same set before and after init.
  static cb_capabilities capabilities(const cb_backend*) { return static_capabilities(); }
  static std::unique_ptr<cb_backend> create_backend(const cb_host_services& host) {
    return commbench::gloo_backend::create_backend(host);
  }
  static void emit_metadata(const cb_backend& b, void (*emit)(void*, const char*, const char*), void* ctx) {
    commbench::gloo_backend::emit_metadata(b, emit, ctx);
  }
  static std::unique_ptr<cb_comm> create_communicator(cb_backend& b, int32_t timeout_ms) {
    return commbench::gloo_backend::create_communicator(b, timeout_ms);
  }
  static std::unique_ptr<cb_request> post(cb_comm& comm, const cb_op_args& args) { return post_op(comm, args); }
  static bool test(cb_request& r) { return test_request(r); }
  static void wait(cb_request& r, int32_t timeout_ms) { wait_request(r, timeout_ms); }
  static void complete(cb_comm& comm, const cb_op_args& args, int32_t timeout_ms) { complete_op(comm, args, timeout_ms); }
  // Closes every connection (peers blocked on this rank fail at once); the SDK frees the
  // communicator even if closing throws: nothing is called on it afterwards (docs/plugin-abi.md §4).
  static void abort_communicator(std::unique_ptr<cb_comm> comm) { commbench::gloo_backend::abort_communicator(*comm); }
  // The option table parse_options reads, exported as the ABI 1.2 descriptors.
  static constexpr const auto& options = kOptionTable;
};

constexpr cb_backend_api kApi = commbench::sdk::EntryPoints<GlooTraits>::table(
    COMMBENCH_GLOO_PLUGIN_VERSION,
    "Gloo collectives and send/recv over TCP (Debian libgloo), host memory");
// Plain host memory from the host is what gloo wants (no mem_alloc); no batched launch.

}  // namespace

// Pure: returns a constant table; initialises nothing.
extern "C" CB_EXPORT const cb_backend_api* commbench_backend_v1(void) { return &kApi; }
