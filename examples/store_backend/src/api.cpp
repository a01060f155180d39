// The plugin's face: the function table commbench finds through the entry symbol, and the
// lifecycle around the operations in collectives.cpp.
//
// Rules this file follows (docs/plugin-abi.md in commbench has them all):
//  - Calling the entry symbol does nothing but return a static table: commbench calls it to list
//    plugins on machines that may lack the backend's hardware.
//  - No C++ exception crosses the C boundary: every function catches and returns a cb_error*.
//  - Every struct the plugin fills (the table, capabilities) carries a struct_size, and the plugin
//    writes no field past the struct_size the host gave it.
//  - The worker drives the plugin from one thread, so no locking is needed here.
#include <algorithm>
#include <charconv>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "store_backend.h"

#ifndef STORE_BACKEND_VERSION
#define STORE_BACKEND_VERSION "0.0.0"
#endif

namespace store_backend {
namespace {

// ---- errors: allocated here, freed by the host through error_destroy (never with its own
// delete, which might be another allocator).

// Returned when even an error cannot be allocated; error_destroy knows not to free it.
cb_error g_out_of_memory{CB_ERR_RESOURCE_EXHAUSTED, "store backend: out of memory"};

cb_error* make_error(cb_status code, const std::string& message) {
  try {
    return new cb_error{code, "store backend: " + message};
  } catch (const std::bad_alloc&) {
    return &g_out_of_memory;
  }
}

// Runs `body`, turning any exception into the matching cb_error*.
template <class Body>
cb_error* guarded(Body&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const Failure& e) {
    return make_error(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return make_error(CB_ERR_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception& e) {
    return make_error(CB_ERR_INTERNAL, e.what());
  } catch (...) {
    return make_error(CB_ERR_INTERNAL, "unknown exception");
  }
}

cb_status error_code(const cb_error* e) { return e->code; }
const char* error_message(const cb_error* e) { return e->message.c_str(); }
void error_destroy(cb_error* e) {
  if (e != &g_out_of_memory) delete e;
}

// ---- capabilities: static, so the same answer with or without a backend.

cb_error* get_capabilities(const cb_backend*, cb_capabilities* out) {
  cb_capabilities caps{};
  caps.struct_size = out->struct_size;                 // the host's size, left as it was
  caps.ops = CB_BIT(CB_OP_COUNT_V1) - 1;               // every op of ABI 1.0
  caps.dtypes = CB_BIT(CB_DTYPE_COUNT_V1) - 1;         // bytes are bytes: any dtype moves
  caps.reduce_dtypes = CB_BIT(CB_DTYPE_COUNT_V1) - 1;  // sdk::reduce handles every dtype
  caps.redops = CB_BIT(CB_REDOP_COUNT_V1) - 1;
  caps.mem_types = CB_BIT(CB_MEM_HOST) | CB_BIT(CB_MEM_HOST_PINNED);  // the CPU reads both
  caps.flags = CB_CAP_IN_PLACE | CB_CAP_OUT_OF_PLACE;  // no ASYNC: collectives block in post
  // The host's struct may be older (smaller) than ours: write only what fits in it.
  std::memcpy(out, &caps, std::min(out->struct_size, CB_STRUCT_SIZE(cb_capabilities, flags)));
  return nullptr;
}

// ---- lifecycle

int32_t parse_timeout(const char* text) {
  int32_t value = 0;
  const char* end = text + std::strlen(text);
  auto [ptr, ec] = std::from_chars(text, end, value);
  if (ec != std::errc() || ptr != end || *text == '\0')
    throw Failure(CB_ERR_INVALID_ARGUMENT,
                  std::string("option timeout_ms='") + text + "' is not an integer (milliseconds; negative = no limit)");
  return value;
}

cb_error* init(const cb_host_services* host, cb_backend** out) {
  return guarded([&] {
    int32_t timeout_ms = 60000;
    // Options come from the experiment's [run.options.store] table, all values as strings.
    // Reject unknown keys: a typo silently ignored makes a benchmark measure the wrong thing.
    for (size_t i = 0; i < host->num_options; ++i) {
      const cb_option& o = host->options[i];
      if (std::strcmp(o.key, "timeout_ms") == 0)
        timeout_ms = parse_timeout(o.value);
      else
        throw Failure(CB_ERR_INVALID_ARGUMENT,
                      std::string("unknown option '") + o.key + "' (this backend knows: timeout_ms)");
    }
    auto* backend = new cb_backend{};
    backend->host = host;
    backend->op_timeout_ms = timeout_ms;
    *out = backend;
    std::string hello = "rank " + std::to_string(host->rank) + " of " +
                        std::to_string(host->world_size) + ", op timeout " +
                        std::to_string(timeout_ms) + " ms";
    host->log(host->ctx, CB_LOG_DEBUG, hello.c_str());
  });
}

cb_error* finalize(cb_backend* backend) {
  delete backend;
  return nullptr;
}

cb_error* get_metadata(const cb_backend* backend, void (*emit)(void*, const char*, const char*),
                       void* ctx) {
  return guarded([&] {
    emit(ctx, "transport", "commbench bootstrap services (key/value store)");
    emit(ctx, "op_timeout_ms", std::to_string(backend->op_timeout_ms).c_str());
  });
}

cb_error* comm_create(cb_backend* backend, int32_t timeout_ms, cb_comm** out) {
  return guarded([&] {
    // comm_create is collective: the barrier makes sure every rank has a communicator before
    // anyone posts, and the counter (advanced on every rank alike) keeps two communicators'
    // messages apart.
    const cb_host_services& h = *backend->host;
    check_host(h.bootstrap_barrier(h.ctx, timeout_ms), "bootstrap_barrier");
    auto* comm = new cb_comm{};
    comm->backend = backend;
    comm->key_prefix = "comm" + std::to_string(backend->comms_created++) + "/";
    *out = comm;
  });
}

cb_error* comm_destroy(cb_comm* comm) {
  delete comm;  // nothing in flight: the host completes and frees every request before this
  return nullptr;
}

// ---- operations

cb_error* post(cb_comm* comm, const cb_op_args* args, cb_request** out) {
  return guarded([&] {
    // Read only the fields the host's struct has. All of 1.0 are needed, so an older or broken
    // host struct is an invalid argument rather than something to guess about.
    if (args->struct_size < CB_STRUCT_SIZE(cb_op_args, tag))
      throw Failure(CB_ERR_INVALID_ARGUMENT, "cb_op_args.struct_size is too small");
    auto request = std::make_unique<cb_request>();
    request->comm = comm;
    run_operation(*comm, *args, *request);
    *out = request.release();  // from here on the host owns it, until request_free
  });
}

cb_error* test(cb_request* request, int32_t* done) {
  return guarded([&] { *done = try_complete(*request, /*timeout_ms=*/0) ? 1 : 0; });
}

cb_error* wait(cb_request* request, int32_t timeout_ms) {
  return guarded([&] {
    if (!try_complete(*request, timeout_ms))
      throw Failure(CB_ERR_TIMEOUT, "receive " + request->pending_key + " did not complete within " +
                                        std::to_string(timeout_ms) + " ms: its sender is late or gone");
  });
}

void request_free(cb_request* request) { delete request; }

}  // namespace
}  // namespace store_backend

// The one exported symbol. extern "C" keeps its name unmangled, CB_EXPORT makes it visible even
// though commbench_add_plugin() hides everything else.
extern "C" CB_EXPORT const cb_backend_api* commbench_backend_v1(void) {
  using namespace store_backend;
  static const cb_backend_api api = [] {
    cb_backend_api a{};
    // Not sizeof: see the ABI doc. The table ends at group_end: `complete` (1.1) is optional,
    // and without it the core drives this plugin with post + wait + request_free.
    a.struct_size = CB_STRUCT_SIZE(cb_backend_api, group_end);
    a.abi_major = CB_ABI_MAJOR;
    a.abi_minor = CB_ABI_MINOR;
    a.name = "store";  // must match the file name libcommbench_backend_store.so
    a.version = STORE_BACKEND_VERSION;
    a.description = "example plugin: every op through commbench's bootstrap store (slow, portable)";
    a.error_code = error_code;
    a.error_message = error_message;
    a.error_destroy = error_destroy;
    a.get_capabilities = get_capabilities;
    a.init = init;
    a.finalize = finalize;
    a.get_metadata = get_metadata;
    a.comm_create = comm_create;
    a.comm_destroy = comm_destroy;
    a.comm_abort = comm_destroy;  // nothing to cancel: aborting is destroying
    a.post = post;
    a.test = test;
    a.wait = wait;
    a.request_free = request_free;
    // Left NULL, meaning "not supported": mem_alloc/mem_free (the host allocates the buffers)
    // and group_start/group_end (no CB_CAP_GROUPS).
    return a;
  }();
  return &api;
}
