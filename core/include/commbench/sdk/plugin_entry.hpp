// The ABI wrappers every C++ plugin needs, written once: argument checks, exceptions turned into
// cb_error objects, ownership handed across as raw pointers. A plugin describes itself with a
// traits type and puts EntryPoints<Traits>::... into its cb_backend_api. Header-only plugin SDK.
//
//   struct Traits {
//     static constexpr const char* name = "mine";
//     static cb_error* translate(std::string_view what) noexcept;  // inside a catch block
//     static cb_capabilities capabilities(const cb_backend* backend_or_null);
//     static std::unique_ptr<cb_backend> create_backend(const cb_host_services&);
//     static void emit_metadata(const cb_backend&, void (*emit)(void*, const char*, const char*), void*);
//     static std::unique_ptr<cb_comm> create_communicator(cb_backend&, int32_t timeout_ms);
//     static std::unique_ptr<cb_request> post(cb_comm&, const cb_op_args&);
//     static bool test(cb_request&);                 // complete yet? throws if it failed
//     static void wait(cb_request&, int32_t timeout_ms);
//   };
//
// cb_backend, cb_comm and cb_request must be complete types where this is instantiated.
#pragma once

#include <cstdio>
#include <memory>
#include <string_view>

#include "commbench/backend.h"
#include "commbench/sdk/capabilities.hpp"
#include "commbench/sdk/plugin_error.hpp"

namespace commbench::sdk {

template <class Traits>
struct EntryPoints {
  // Runs `body`; what it throws becomes an error whose message starts "<plugin> <function>".
  // The prefix is built only on failure: post/test/wait are on the timed path.
  template <class Body>
  static cb_error* guarded(const char* function, Body&& body) noexcept {
    try {
      body();
      return nullptr;
    } catch (...) {
      char context[64];
      std::snprintf(context, sizeof(context), "%s %s", Traits::name, function);
      return Traits::translate(context);
    }
  }

  static cb_status error_code(const cb_error* error) { return error != nullptr ? error->code : CB_OK; }
  static const char* error_message(const cb_error* error) {
    return error != nullptr ? error->message.c_str() : "";
  }
  static void error_destroy(cb_error* error) { destroy_error(error); }

  static cb_error* get_capabilities(const cb_backend* backend, cb_capabilities* out) {
    return guarded("get_capabilities", [&] {
      require_argument(out, "out");
      if (out->struct_size != 0 && out->struct_size < CB_STRUCT_SIZE(cb_capabilities, struct_size))
        fail(CB_ERR_INVALID_ARGUMENT, "cb_capabilities.struct_size is too small");
      write_capabilities(Traits::capabilities(backend), out);
    });
  }

  static cb_error* init(const cb_host_services* host, cb_backend** out) {
    return guarded("init", [&] {
      require_argument(host, "host");
      require_argument(out, "out");
      *out = nullptr;
      *out = Traits::create_backend(*host).release();
    });
  }

  static cb_error* finalize(cb_backend* backend) {
    return guarded("finalize", [&] { delete backend; });
  }

  static cb_error* get_metadata(const cb_backend* backend,
                                void (*emit)(void* ctx, const char* key, const char* value), void* ctx) {
    return guarded("get_metadata", [&] {
      require_argument(backend, "backend");
      require_argument(reinterpret_cast<const void*>(emit), "emit");
      Traits::emit_metadata(*backend, emit, ctx);
    });
  }

  static cb_error* comm_create(cb_backend* backend, int32_t timeout_ms, cb_comm** out) {
    return guarded("comm_create", [&] {
      require_argument(backend, "backend");
      require_argument(out, "out");
      *out = nullptr;
      *out = Traits::create_communicator(*backend, timeout_ms).release();
    });
  }

  static cb_error* post(cb_comm* comm, const cb_op_args* args, cb_request** out) {
    return guarded(label_of(args, "post"), [&] {
      require_argument(comm, "comm");
      require_argument(args, "args");
      require_argument(out, "out");
      *out = nullptr;
      *out = Traits::post(*comm, *args).release();
    });
  }

  static cb_error* test(cb_request* request, int32_t* done) {
    return guarded("test", [&] {
      require_argument(request, "request");
      require_argument(done, "done");
      *done = Traits::test(*request) ? 1 : 0;
    });
  }

  static cb_error* wait(cb_request* request, int32_t timeout_ms) {
    return guarded("wait", [&] {
      require_argument(request, "request");
      Traits::wait(*request, timeout_ms);
    });
  }

  // One op to completion without a request crossing the ABI. A plugin may supply
  // `static void complete(cb_comm&, const cb_op_args&, int32_t timeout_ms)` for a faster path;
  // otherwise its post and wait are composed here.
  static cb_error* complete(cb_comm* comm, const cb_op_args* args, int32_t timeout_ms) {
    return guarded(label_of(args, "complete"), [&] {
      require_argument(comm, "comm");
      require_argument(args, "args");
      if constexpr (requires { Traits::complete(*comm, *args, timeout_ms); }) {
        Traits::complete(*comm, *args, timeout_ms);
      } else {
        Traits::wait(*Traits::post(*comm, *args), timeout_ms);
      }
    });
  }

  static void request_free(cb_request* request) {
    try {
      delete request;
    } catch (...) {
      // Nothing to report through a void function; the request is gone either way.
    }
  }

  // What differs between plugins besides the traits: teardown, memory, batching (NULL where the
  // plugin has none, which the ABI reads as "unsupported").
  struct Extras {
    cb_error* (*comm_destroy)(cb_comm*);
    cb_error* (*comm_abort)(cb_comm*);
    cb_error* (*mem_alloc)(cb_comm*, cb_mem, size_t, void**) = nullptr;
    cb_error* (*mem_free)(cb_comm*, cb_mem, void*) = nullptr;
    cb_error* (*group_start)(cb_comm*) = nullptr;
    cb_error* (*group_end)(cb_comm*) = nullptr;
  };

  // The whole ABI function table.
  static constexpr cb_backend_api table(const char* version, const char* description, Extras x) {
    return cb_backend_api{
        .struct_size = sizeof(cb_backend_api),
        .abi_major = CB_ABI_MAJOR,
        .abi_minor = CB_ABI_MINOR,
        .name = Traits::name,
        .version = version,
        .description = description,
        .error_code = error_code,
        .error_message = error_message,
        .error_destroy = error_destroy,
        .get_capabilities = get_capabilities,
        .init = init,
        .finalize = finalize,
        .get_metadata = get_metadata,
        .comm_create = comm_create,
        .comm_destroy = x.comm_destroy,
        .comm_abort = x.comm_abort,
        .mem_alloc = x.mem_alloc,
        .mem_free = x.mem_free,
        .post = post,
        .test = test,
        .wait = wait,
        .request_free = request_free,
        .group_start = x.group_start,
        .group_end = x.group_end,
        .complete = complete,
    };
  }

 private:
  // Errors of post/complete are named after the op ("gloo recv: ..."), when args say which.
  static const char* label_of(const cb_op_args* args, const char* fallback) {
    return args != nullptr && args->struct_size >= CB_STRUCT_SIZE(cb_op_args, op) &&
                   static_cast<unsigned>(args->op) < CB_OP_COUNT_V1
               ? op_label(args->op)
               : fallback;
  }
  static const char* op_label(cb_op op) {
    static const char* const kNames[CB_OP_COUNT_V1] = {
        "allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall",
        "gather",    "scatter",   "barrier",       "send",      "recv"};
    return kNames[op];
  }
};

}  // namespace commbench::sdk
