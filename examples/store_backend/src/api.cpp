// The plugin's face: the function table commbench finds through the entry symbol, and the
// lifecycle around the operations in collectives.cpp. Written on commbench's header-only SDK, as
// the in-tree plugins are: copy this file and replace what the traits call.
//
// Rules this file follows (docs/plugin-abi.md in commbench has them all):
//  - Calling the entry symbol does nothing but return a static table: commbench calls it to list
//    plugins on machines that may lack the backend's hardware.
//  - No C++ exception crosses the C boundary: sdk::EntryPoints runs every function's body in a
//    guard that turns what it throws into a cb_error* (Traits::translate says how).
//  - Every struct the plugin fills carries a struct_size: the SDK writes no capability field past
//    the host's struct_size, and sets the table's with CB_STRUCT_SIZE (never sizeof).
//  - The worker drives the plugin from one thread, so no locking is needed here.
//  - `commbench conformance ./libcommbench_backend_store.so` proves all of it before shipping.
#include <memory>
#include <string>
#include <string_view>

#include <commbench/sdk/capabilities.hpp>
#include <commbench/sdk/host_services.hpp>
#include <commbench/sdk/plugin_entry.hpp>
#include <commbench/sdk/plugin_error.hpp>
#include <commbench/sdk/option_table.hpp>

#include "store_backend.h"

#ifndef STORE_BACKEND_VERSION
#define STORE_BACKEND_VERSION "0.0.0"
#endif

namespace store_backend {

namespace sdk = commbench::sdk;

cb_capabilities capabilities() {
  cb_capabilities caps{};
  caps.ops = sdk::all_bits(CB_OP_COUNT_V1);                // every op of ABI 1.0
  caps.dtypes = sdk::all_bits(CB_DTYPE_COUNT_V1);          // bytes are bytes: any dtype moves
  caps.reduce_dtypes = sdk::all_bits(CB_DTYPE_COUNT_V1);   // sdk::reduce handles every dtype
  caps.redops = sdk::all_bits(CB_REDOP_COUNT_V1);
  caps.mem_types = CB_BIT(CB_MEM_HOST) | CB_BIT(CB_MEM_HOST_PINNED);  // the CPU reads both
  caps.flags = CB_CAP_IN_PLACE | CB_CAP_OUT_OF_PLACE;      // no ASYNC: collectives block in post
  return caps;
}

namespace {

// Every option, defined once (sdk/option_table.hpp): name, type, default, doc, where it goes.
constexpr sdk::OptionDef<cb_backend> kOptions[] = {
    {.name = "timeout_ms", .type = CB_OPTION_INT, .default_value = "60000",
     .doc = "limit of every store wait inside an op, ms (negative = no limit)",
     .apply = [](cb_backend& b, const sdk::OptionValue& v) { b.op_timeout_ms = static_cast<int32_t>(v.integer); },
     .min = -1, .max = INT32_MAX},
};

// What the SDK's EntryPoints needs from a plugin (the contract is in sdk/plugin_entry.hpp).
struct StoreTraits {
  static constexpr const char* name = "store";  // must match libcommbench_backend_store.so

  // Called inside a catch block: sdk::PluginError keeps its status, bad_alloc becomes
  // RESOURCE_EXHAUSTED, anything else INTERNAL; `what` names the plugin and function.
  static cb_error* translate(std::string_view what) noexcept { return sdk::error_from_standard_exception(what); }

  // Static: the same answer with or without a backend.
  static cb_capabilities capabilities(const cb_backend*) { return store_backend::capabilities(); }

  static std::unique_ptr<cb_backend> create_backend(const cb_host_services& given) {
    auto backend = std::make_unique<cb_backend>();
    backend->host = sdk::copy_host_services(given, name);
    // Options come from the experiment's [run.options.store] table, all values as strings, and
    // are read by kOptions (below): an unknown key or a bad value is an error naming it, and the
    // same table, exported with the entry points, lets `commbench validate` catch it first.
    const cb_host_services& h = backend->host;
    sdk::apply_options<cb_backend>(kOptions, name, h.options, h.num_options, *backend);
    const std::string hello = "rank " + std::to_string(h.rank) + " of " + std::to_string(h.world_size) +
                              ", op timeout " + std::to_string(backend->op_timeout_ms) + " ms";
    h.log(h.ctx, CB_LOG_DEBUG, hello.c_str());
    return backend;
  }

  static void emit_metadata(const cb_backend& b, void (*emit)(void*, const char*, const char*), void* ctx) {
    emit(ctx, "transport", "commbench bootstrap services (key/value store)");
    emit(ctx, "op_timeout_ms", std::to_string(b.op_timeout_ms).c_str());
  }

  static std::unique_ptr<cb_comm> create_communicator(cb_backend& backend, int32_t timeout_ms) {
    // comm_create is collective: the barrier makes sure every rank has a communicator before
    // anyone posts, and the counter (advanced on every rank alike) keeps two communicators'
    // messages apart.
    const cb_host_services& h = backend.host;
    check_host(h.bootstrap_barrier(h.ctx, timeout_ms), "bootstrap_barrier");
    auto comm = std::make_unique<cb_comm>();
    comm->backend = &backend;
    comm->op_timeout_ms =
        timeout_ms >= 0 && timeout_ms < backend.op_timeout_ms ? timeout_ms : backend.op_timeout_ms;
    comm->key_prefix = "comm" + std::to_string(backend.comms_created++) + "/";
    return comm;
  }

  static std::unique_ptr<cb_request> post(cb_comm& comm, const cb_op_args& args) {
    auto request = std::make_unique<cb_request>();
    request->comm = &comm;
    run_operation(comm, args, *request);
    return request;  // from here on the host owns it, until request_free
  }

  static bool test(cb_request& request) { return try_complete(request, /*timeout_ms=*/0); }

  static void wait(cb_request& request, int32_t timeout_ms) {
    if (!try_complete(request, timeout_ms))
      fail(CB_ERR_TIMEOUT, "receive " + request.pending_key + " did not complete within " +
                               std::to_string(timeout_ms) + " ms: its sender is late or gone");
  }

  // Nothing to cancel: a pending receive is only a key this rank will not read. Defining it
  // gives the table a comm_abort (the core's call after a timeout) that never waits for peers.
  static void abort_communicator(std::unique_ptr<cb_comm>) {}
  // Exported as the option descriptors: `commbench plugins store` lists them.
  static constexpr const auto& options = kOptions;
  // Left out, so the table says "not supported" (NULL): allocate/release (the host allocates the
  // buffers), group_start/group_end (no CB_CAP_GROUPS). `complete` is composed of post + wait.
};

constexpr cb_backend_api kApi = sdk::EntryPoints<StoreTraits>::table(
    STORE_BACKEND_VERSION, "example plugin: every op through commbench's bootstrap store (slow, portable)");

}  // namespace
}  // namespace store_backend

// The one exported symbol. extern "C" keeps its name unmangled, CB_EXPORT makes it visible even
// though commbench_add_plugin() hides everything else. Pure: returns a constant table.
extern "C" CB_EXPORT const cb_backend_api* commbench_backend_v1(void) { return &store_backend::kApi; }
