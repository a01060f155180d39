// The exported function table: the ABI boundary. Every function here catches everything
// (through guarded()) so that no C++ exception reaches the C caller.
#include <memory>
#include <string_view>

#include "backend.h"
#include "capabilities.h"
#include "commbench/backend.h"
#include "communicator.h"
#include "errors.h"
#include "p2p.h"
#include "post.h"
#include "request.h"

#ifndef COMMBENCH_GLOO_PLUGIN_VERSION
#define COMMBENCH_GLOO_PLUGIN_VERSION "0.0.0"
#endif

namespace {

using namespace commbench::gloo_backend;

void require_argument(const void* pointer, const char* name) {
  if (pointer == nullptr) fail(CB_ERR_INVALID_ARGUMENT, std::string(name) + " is NULL");
}

// Literal prefixes for error messages (built before the try block, so they must not allocate).
std::string_view post_context(const cb_op_args* args) {
  if (args == nullptr || args->struct_size < CB_STRUCT_SIZE(cb_op_args, op)) return "gloo post";
  switch (args->op) {
    case CB_OP_ALLREDUCE: return "gloo allreduce";
    case CB_OP_ALLGATHER: return "gloo allgather";
    case CB_OP_REDUCESCATTER: return "gloo reducescatter";
    case CB_OP_BROADCAST: return "gloo broadcast";
    case CB_OP_REDUCE: return "gloo reduce";
    case CB_OP_ALLTOALL: return "gloo alltoall";
    case CB_OP_GATHER: return "gloo gather";
    case CB_OP_SCATTER: return "gloo scatter";
    case CB_OP_BARRIER: return "gloo barrier";
    case CB_OP_SEND: return "gloo send";
    case CB_OP_RECV: return "gloo recv";
    default: return "gloo post";
  }
}

cb_status error_code(const cb_error* error) { return error != nullptr ? error->code : CB_OK; }

const char* error_message(const cb_error* error) {
  return error != nullptr ? error->message.c_str() : "";
}

void error_destroy(cb_error* error) { destroy_error(error); }

cb_error* get_capabilities(const cb_backend* /*backend: same set before and after init*/,
                           cb_capabilities* out) {
  return guarded("gloo get_capabilities", [&] {
    require_argument(out, "out");
    if (out->struct_size != 0 && out->struct_size < CB_STRUCT_SIZE(cb_capabilities, struct_size))
      fail(CB_ERR_INVALID_ARGUMENT, "cb_capabilities.struct_size is too small");
    write_capabilities(static_capabilities(), out);
  });
}

cb_error* init(const cb_host_services* host, cb_backend** out) {
  return guarded("gloo init", [&] {
    require_argument(host, "host");
    require_argument(out, "out");
    *out = nullptr;
    *out = create_backend(*host).release();
  });
}

cb_error* finalize(cb_backend* backend) {
  return guarded("gloo finalize", [&] { delete backend; });
}

cb_error* get_metadata(const cb_backend* backend,
                       void (*emit)(void* ctx, const char* key, const char* value), void* ctx) {
  return guarded("gloo get_metadata", [&] {
    require_argument(backend, "backend");
    require_argument(reinterpret_cast<const void*>(emit), "emit");
    emit_metadata(*backend, emit, ctx);
  });
}

cb_error* comm_create(cb_backend* backend, int32_t timeout_ms, cb_comm** out) {
  return guarded("gloo comm_create", [&] {
    require_argument(backend, "backend");
    require_argument(out, "out");
    *out = nullptr;
    *out = create_communicator(*backend, timeout_ms).release();
  });
}

cb_error* comm_destroy(cb_comm* comm) {
  return guarded("gloo comm_destroy", [&] { delete comm; });
}

// Closes every connection (peers blocked on this rank fail at once) and frees the
// communicator: nothing is called on it afterwards (docs/plugin-abi.md §4).
cb_error* comm_abort(cb_comm* comm) {
  return guarded("gloo comm_abort", [&] {
    require_argument(comm, "comm");
    const std::unique_ptr<cb_comm> owned(comm);  // freed even if closing throws
    abort_communicator(*owned);
  });
}

cb_error* post(cb_comm* comm, const cb_op_args* args, cb_request** out) {
  return guarded(post_context(args), [&] {
    require_argument(comm, "comm");
    require_argument(args, "args");
    require_argument(out, "out");
    *out = nullptr;
    *out = post_op(*comm, *args).release();
  });
}

cb_error* test(cb_request* request, int32_t* done) {
  return guarded("gloo test", [&] {
    require_argument(request, "request");
    require_argument(done, "done");
    *done = test_request(*request) ? 1 : 0;
  });
}

cb_error* wait(cb_request* request, int32_t timeout_ms) {
  return guarded("gloo wait", [&] {
    require_argument(request, "request");
    wait_request(*request, timeout_ms);
  });
}

void request_free(cb_request* request) {
  try {
    delete request;
  } catch (...) {
    // Nothing to report through a void function; the request is gone either way.
  }
}

constexpr cb_backend_api kApi = {
    .struct_size = sizeof(cb_backend_api),
    .abi_major = CB_ABI_MAJOR,
    .abi_minor = CB_ABI_MINOR,
    .name = "gloo",
    .version = COMMBENCH_GLOO_PLUGIN_VERSION,
    .description = "Gloo collectives and send/recv over TCP (Debian libgloo), host memory",
    .error_code = error_code,
    .error_message = error_message,
    .error_destroy = error_destroy,
    .get_capabilities = get_capabilities,
    .init = init,
    .finalize = finalize,
    .get_metadata = get_metadata,
    .comm_create = comm_create,
    .comm_destroy = comm_destroy,
    .comm_abort = comm_abort,
    .mem_alloc = nullptr,  // plain host memory from the host is what gloo wants
    .mem_free = nullptr,
    .post = post,
    .test = test,
    .wait = wait,
    .request_free = request_free,
    .group_start = nullptr,  // gloo has no batched launch
    .group_end = nullptr,
};

}  // namespace

// Pure: returns a constant table; initialises nothing.
extern "C" CB_EXPORT const cb_backend_api* commbench_backend_v1(void) { return &kApi; }
