// The exported function table: the ABI boundary. The SDK's EntryPoints supplies the wrappers
// every plugin shares (argument checks, exceptions to cb_error); what is the ucx plugin's own is
// the traits below and the teardown and memory functions.
#include <memory>
#include <string_view>

#include "backend.h"
#include "capabilities.h"
#include "commbench/backend.h"
#include "commbench/sdk/plugin_entry.hpp"
#include "communicator.h"
#include "errors.h"
#include "request.h"

#ifndef COMMBENCH_UCX_PLUGIN_VERSION
#define COMMBENCH_UCX_PLUGIN_VERSION "0.0.0"
#endif

namespace {

using namespace commbench::ucx_backend;

struct UcxTraits {
  static constexpr const char* name = "ucx";
  static cb_error* translate(std::string_view what) noexcept {
    return commbench::sdk::error_from_standard_exception(what);
  }
  static cb_capabilities capabilities(const cb_backend* backend) {
    return backend != nullptr ? backend->capabilities : static_capabilities();
  }
  static std::unique_ptr<cb_backend> create_backend(const cb_host_services& host) {
    return commbench::ucx_backend::create_backend(host);
  }
  static void emit_metadata(const cb_backend& b, void (*emit)(void*, const char*, const char*), void* ctx) {
    commbench::ucx_backend::emit_metadata(b, emit, ctx);
  }
  static std::unique_ptr<cb_comm> create_communicator(cb_backend& b, int32_t timeout_ms) {
    return commbench::ucx_backend::create_communicator(b, timeout_ms);
  }
  static std::unique_ptr<cb_request> post(cb_comm& comm, const cb_op_args& args) { return post_op(comm, args); }
  static bool test(cb_request& r) { return test_request(r); }
  static void wait(cb_request& r, int32_t timeout_ms) { wait_request(r, timeout_ms); }
  static void complete(cb_comm& comm, const cb_op_args& args, int32_t timeout_ms) {
    complete_op(comm, args, timeout_ms);
  }
  static void destroy_communicator(std::unique_ptr<cb_comm> comm) {
    commbench::ucx_backend::destroy_communicator(std::move(comm));
  }
  // Force-closes every endpoint and frees the communicator (docs/plugin-abi.md §4).
  static void abort_communicator(std::unique_ptr<cb_comm> comm) {
    commbench::ucx_backend::abort_communicator(std::move(comm));
  }
  static void* allocate(cb_comm& comm, cb_mem mem, size_t bytes) { return comm.memory->allocate(mem, bytes); }
  static void release(cb_comm& comm, cb_mem mem, void* ptr) { comm.memory->release(mem, ptr); }
  // The option table parse_options reads, exported as the ABI 1.2 descriptors.
  static constexpr const auto& options = kOptionTable;
};

// No group calls: send/recv are already non-blocking, there is nothing to batch.
constexpr cb_backend_api kApi = commbench::sdk::EntryPoints<UcxTraits>::table(
    COMMBENCH_UCX_PLUGIN_VERSION,
    "UCX (UCP tag matching): send/recv and collectives over shared memory or TCP, host memory");

}  // namespace

// Pure: returns a constant table; initialises nothing (UCX is first touched in init()).
extern "C" CB_EXPORT const cb_backend_api* commbench_backend_v1(void) { return &kApi; }
