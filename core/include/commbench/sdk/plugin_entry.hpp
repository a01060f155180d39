// The ABI wrappers every C++ plugin needs, written once: argument checks, exceptions turned into
// cb_error objects, ownership handed across as raw pointers. A plugin describes itself with a
// traits type and exports EntryPoints<Traits>::table(...). Header-only plugin SDK (C++20);
// docs/plugin-guide.md §11 documents the contract, examples/store_backend is a complete plugin.
//
//   struct Traits {
//     // required
//     static constexpr const char* name = "mine";     // as in libcommbench_backend_mine.so
//     static cb_error* translate(std::string_view what) noexcept;  // inside a catch block, e.g.
//                                                     //   sdk::error_from_standard_exception(what)
//     static cb_capabilities capabilities(const cb_backend* backend_or_null);
//     static std::unique_ptr<cb_backend> create_backend(const cb_host_services&);
//     static void emit_metadata(const cb_backend&, void (*emit)(void*, const char*, const char*), void*);
//     static std::unique_ptr<cb_comm> create_communicator(cb_backend&, int32_t timeout_ms);
//     static std::unique_ptr<cb_request> post(cb_comm&, const cb_op_args&);
//     static bool test(cb_request&);                 // complete yet? throws if it failed
//     static void wait(cb_request&, int32_t timeout_ms);  // throws PluginError(CB_ERR_TIMEOUT) when it passes
//     // optional: each one present fills its slot of the table, absent ones stay NULL or default
//     static void complete(cb_comm&, const cb_op_args&, int32_t timeout_ms);  // else post + wait
//     static void destroy_communicator(std::unique_ptr<cb_comm>);  // else `delete comm`
//     static void abort_communicator(std::unique_ptr<cb_comm>);    // else no comm_abort (the core destroys)
//     static void* allocate(cb_comm&, cb_mem, size_t bytes);        // mem_alloc, with
//     static void release(cb_comm&, cb_mem, void* ptr);             //   mem_free
//     static void group_start(cb_comm&);                            // group_start, with
//     static void group_end(cb_comm&);                              //   group_end (CB_CAP_GROUPS)
//     static void enqueue(cb_comm&, const cb_op_args&);  // 1.3: stream-ordered, no request
//     static constexpr const auto& options = kMyOptions;  // sdk::OptionDef<...>[] (option_table.hpp):
//                                                     //   exported as the 1.2 option descriptors
//   };
//
// cb_backend, cb_comm and cb_request must be complete types where this is instantiated; cb_error
// is the SDK's (plugin_error.hpp): a plugin must not define its own.
#pragma once

#include <cstdio>
#include <memory>
#include <string_view>

#include "commbench/backend.h"
#include "commbench/sdk/capabilities.hpp"
#include "commbench/sdk/dtypes.hpp"
#include "commbench/sdk/option_table.hpp"
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
  // guarded() for an op: the op's name (label_of) is looked up only on failure, too.
  template <class Body>
  static cb_error* guarded_op(const cb_op_args* args, const char* fallback, Body&& body) noexcept {
    try {
      body();
      return nullptr;
    } catch (...) {
      char context[64];
      std::snprintf(context, sizeof(context), "%s %s", Traits::name, label_of(args, fallback));
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
    return guarded_op(args, "post", [&] {
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
    return guarded_op(args, "complete", [&] {
      require_argument(comm, "comm");
      require_argument(args, "args");
      if constexpr (requires { Traits::complete(*comm, *args, timeout_ms); }) {
        Traits::complete(*comm, *args, timeout_ms);
      } else {
        Traits::wait(*Traits::post(*comm, *args), timeout_ms);
      }
    });
  }

  // 1.3: a stream-ordered op enqueued with no request (the stream says when it completed).
  static cb_error* enqueue(cb_comm* comm, const cb_op_args* args) {
    return guarded_op(args, "enqueue", [&] {
      require_argument(comm, "comm");
      require_argument(args, "args");
      if constexpr (requires { Traits::enqueue(*comm, *args); }) Traits::enqueue(*comm, *args);
    });
  }

  static void request_free(cb_request* request) {
    try {
      delete request;
    } catch (...) {
      // Nothing to report through a void function; the request is gone either way.
    }
  }

  static cb_error* comm_destroy(cb_comm* comm) {
    return guarded("comm_destroy", [&] {
      if (comm == nullptr) return;
      if constexpr (requires(std::unique_ptr<cb_comm> c) { Traits::destroy_communicator(std::move(c)); })
        Traits::destroy_communicator(std::unique_ptr<cb_comm>(comm));
      else
        delete comm;
    });
  }

  // Frees the communicator whatever happens: nothing is called on it afterwards (§4).
  static cb_error* comm_abort(cb_comm* comm) {
    return guarded("comm_abort", [&] {
      require_argument(comm, "comm");
      if constexpr (requires(std::unique_ptr<cb_comm> c) { Traits::abort_communicator(std::move(c)); })
        Traits::abort_communicator(std::unique_ptr<cb_comm>(comm));
    });
  }

  static cb_error* mem_alloc(cb_comm* comm, cb_mem given, size_t bytes, void** out) {
    return guarded("mem_alloc", [&] {
      require_argument(comm, "comm");
      require_argument(out, "out");
      *out = nullptr;
      const cb_mem mem = known_mem(given);
      if constexpr (requires { Traits::allocate(*comm, mem, bytes); }) *out = Traits::allocate(*comm, mem, bytes);
    });
  }

  static cb_error* mem_free(cb_comm* comm, cb_mem given, void* ptr) {
    return guarded("mem_free", [&] {
      require_argument(comm, "comm");
      const cb_mem mem = known_mem(given);
      if constexpr (requires { Traits::release(*comm, mem, ptr); })
        if (ptr != nullptr) Traits::release(*comm, mem, ptr);
    });
  }

  static cb_error* group_start(cb_comm* comm) {
    return guarded("group_start", [&] {
      require_argument(comm, "comm");
      if constexpr (requires { Traits::group_start(*comm); }) Traits::group_start(*comm);
    });
  }

  static cb_error* group_end(cb_comm* comm) {
    return guarded("group_end", [&] {
      require_argument(comm, "comm");
      if constexpr (requires { Traits::group_end(*comm); }) Traits::group_end(*comm);
    });
  }

  // The whole ABI function table, with the optional slots the traits provide. struct_size is
  // CB_STRUCT_SIZE of the last field (never sizeof, §3): this table ends at 1.3's enqueue (NULL
  // when the traits have none); the 1.2 option descriptors are NULL when the traits have no
  // `options` table ("not described").
  static constexpr cb_backend_api table(const char* version, const char* description) {
    constexpr bool has_abort = requires(std::unique_ptr<cb_comm> c) { Traits::abort_communicator(std::move(c)); };
    constexpr bool has_memory = requires(cb_comm& c, cb_mem m, size_t n, void* p) {
      Traits::allocate(c, m, n);
      Traits::release(c, m, p);
    };
    constexpr bool has_groups = requires(cb_comm& c) {
      Traits::group_start(c);
      Traits::group_end(c);
    };
    constexpr bool has_enqueue = requires(cb_comm& c, const cb_op_args& a) { Traits::enqueue(c, a); };
    return cb_backend_api{
        .struct_size = CB_STRUCT_SIZE(cb_backend_api, enqueue),
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
        .comm_destroy = comm_destroy,
        .comm_abort = has_abort ? comm_abort : nullptr,
        .mem_alloc = has_memory ? mem_alloc : nullptr,
        .mem_free = has_memory ? mem_free : nullptr,
        .post = post,
        .test = test,
        .wait = wait,
        .request_free = request_free,
        .group_start = has_groups ? group_start : nullptr,
        .group_end = has_groups ? group_end : nullptr,
        .complete = complete,
        .option_descriptors = kDescribesOptions ? kOptionDescriptors.data() : nullptr,
        .num_option_descriptors = kOptionDescriptors.size(),
        .enqueue = has_enqueue ? enqueue : nullptr,
    };
  }

 private:
  static constexpr bool kDescribesOptions = requires { std::size(Traits::options); };
  static constexpr auto describe() {
    if constexpr (kDescribesOptions) return describe_options(Traits::options);
    else return std::array<cb_option_descriptor, 0>{};
  }
  // The descriptors live here, as constants: the table points at them.
  static constexpr auto kOptionDescriptors = describe();

  // Errors of post/complete are named after the op ("gloo recv: ..."), when args say which.
  // The op is read as an integer first (abi_value): a newer host's op must not be loaded as a cb_op.
  static const char* label_of(const cb_op_args* args, const char* fallback) noexcept {
    if (args == nullptr || args->struct_size < CB_STRUCT_SIZE(cb_op_args, op)) return fallback;
    const auto op = abi_enum<cb_op>(abi_value(args->op), CB_OP_COUNT_V1);
    return op ? op_name(*op).data() : fallback;
  }
  // A memory type the host passes to mem_alloc/mem_free, range-checked before it is used as one.
  static cb_mem known_mem(const cb_mem& given) {
    const auto mem = abi_enum<cb_mem>(abi_value(given), CB_MEM_COUNT_V1);
    if (!mem)
      fail(CB_ERR_UNIMPLEMENTED, "memory type " + std::to_string(abi_value(given)) +
                                     " is not supported by this plugin (a newer host?)");
    return *mem;
  }
};

}  // namespace commbench::sdk
