// The function table of an NCCL-API plugin, written once for nccl and ncclx. A plugin supplies a
// Loader: its name, description, version string, the NCCL version its static capabilities
// assume, and how it gets its NcclApi (linked, or dlopen'ed).
#pragma once

#include <memory>
#include <string_view>

#include "commbench/sdk/plugin_entry.hpp"
#include "nccl_backend.h"
#include "nccl_comm.h"
#include "nccl_types.h"

namespace commbench::nccl_backend {

template <class Loader>
struct NcclTraits {
  static constexpr const char* name = Loader::name;
  static cb_error* translate(std::string_view what) noexcept { return sdk::error_from_standard_exception(what); }
  static cb_capabilities capabilities(const cb_backend* b) {
    return b != nullptr ? nccl_capabilities(b->version, b->compute_major) : nccl_capabilities(Loader::static_version);
  }
  static std::unique_ptr<cb_backend> create_backend(const cb_host_services& host) {
    return create_nccl_backend(host, Loader::name, Loader::load);
  }
  static void emit_metadata(const cb_backend& b, void (*emit)(void*, const char*, const char*), void* ctx) {
    emit_nccl_metadata(b, emit, ctx);
  }
  static std::unique_ptr<cb_comm> create_communicator(cb_backend& b, int32_t timeout_ms) {
    return create_nccl_comm(b, timeout_ms);
  }
  static std::unique_ptr<cb_request> post(cb_comm& c, const cb_op_args& a) { return post_nccl(c, a); }
  static bool test(cb_request& r) { return test_nccl(r); }
  static void wait(cb_request& r, int32_t timeout_ms) { wait_nccl(r, timeout_ms); }
};

template <class Loader>
struct NcclPlugin {
  using Entry = sdk::EntryPoints<NcclTraits<Loader>>;

  static cb_error* comm_destroy(cb_comm* c) {
    return Entry::guarded("comm_destroy", [&] { if (c) destroy_nccl_comm(std::unique_ptr<cb_comm>(c)); });
  }
  static cb_error* comm_abort(cb_comm* c) {
    return Entry::guarded("comm_abort", [&] {
      sdk::require_argument(c, "comm");
      abort_nccl_comm(std::unique_ptr<cb_comm>(c));
    });
  }
  static cb_error* mem_alloc(cb_comm* c, cb_mem type, size_t bytes, void** out) {
    return Entry::guarded("mem_alloc", [&] {
      sdk::require_argument(c, "comm");
      sdk::require_argument(out, "out");
      *out = alloc_nccl(*c, type, bytes);
    });
  }
  static cb_error* mem_free(cb_comm* c, cb_mem, void* p) {
    return Entry::guarded("mem_free", [&] {
      sdk::require_argument(c, "comm");
      if (p) free_nccl(*c, p);
    });
  }
  static cb_error* group_start(cb_comm* c) {
    return Entry::guarded("group_start", [&] {
      sdk::require_argument(c, "comm");
      group_start_nccl(*c);
    });
  }
  static cb_error* group_end(cb_comm* c) {
    return Entry::guarded("group_end", [&] {
      sdk::require_argument(c, "comm");
      group_end_nccl(*c);
    });
  }

  static constexpr cb_backend_api api = Entry::table(
      Loader::plugin_version, Loader::description,
      {comm_destroy, comm_abort, mem_alloc, mem_free, group_start, group_end});
};

}  // namespace commbench::nccl_backend
