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
  static void enqueue(cb_comm& c, const cb_op_args& a) { enqueue_nccl(c, a); }
  static bool test(cb_request& r) { return test_nccl(r); }
  static void wait(cb_request& r, int32_t timeout_ms) { wait_nccl(r, timeout_ms); }
  static void destroy_communicator(std::unique_ptr<cb_comm> c) { destroy_nccl_comm(std::move(c)); }
  static void abort_communicator(std::unique_ptr<cb_comm> c) { abort_nccl_comm(std::move(c)); }
  static void* allocate(cb_comm& c, cb_mem type, size_t bytes) { return alloc_nccl(c, type, bytes); }
  static void release(cb_comm& c, cb_mem, void* p) { free_nccl(c, p); }
  static void group_start(cb_comm& c) { group_start_nccl(c); }
  static void group_end(cb_comm& c) { group_end_nccl(c); }
  static constexpr const auto& options = Loader::options;
};

template <class Loader>
struct NcclPlugin {
  static constexpr cb_backend_api api =
      sdk::EntryPoints<NcclTraits<Loader>>::table(Loader::plugin_version, Loader::description);
};

}  // namespace commbench::nccl_backend
