#include "plugin/backend_session.h"

#include <cstdlib>
#include <fmt/format.h>

namespace commbench {

BackendSession::~BackendSession() {
  // Normal teardown is explicit (shutdown); here we only make sure nothing blocks on exit.
  if (comm_ || backend_) abort();
}

void BackendSession::init(const cb_host_services* host) {
  check(api_.init(host, &backend_), "init");
}

void BackendSession::create_comm(int32_t timeout_ms) {
  check(api_.comm_create(backend_, timeout_ms, &comm_), "comm_create");
}

cb_capabilities BackendSession::capabilities() const {
  return query_capabilities(api_, backend_);
}

std::vector<std::pair<std::string, std::string>> BackendSession::metadata() const {
  std::vector<std::pair<std::string, std::string>> out;
  if (!api_.get_metadata) return out;
  auto emit = [](void* ctx, const char* k, const char* v) {
    static_cast<decltype(out)*>(ctx)->emplace_back(k ? k : "", v ? v : "");
  };
  check(api_.get_metadata(backend_, emit, &out), "get_metadata");
  return out;
}

void* BackendSession::alloc(cb_mem mem, size_t bytes) {
  const size_t rounded = (bytes + 4095) / 4096 * 4096;
  if (api_.mem_alloc) {
    void* p = nullptr;
    check(api_.mem_alloc(comm_, mem, rounded ? rounded : 4096, &p), "mem_alloc");
    return p;
  }
  if (mem != CB_MEM_HOST)
    throw PluginError(CB_ERR_UNIMPLEMENTED, api_.name, "mem_alloc",
                      "the backend has no allocator for this memory type (mem_alloc is NULL)");
  void* p = std::aligned_alloc(4096, rounded ? rounded : 4096);
  if (!p) throw PluginError(CB_ERR_RESOURCE_EXHAUSTED, api_.name, "alloc", fmt::format("cannot allocate {} bytes", bytes));
  return p;
}

void BackendSession::free(cb_mem mem, void* ptr) {
  if (!ptr) return;
  if (api_.mem_alloc && api_.mem_free) {
    check(api_.mem_free(comm_, mem, ptr), "mem_free");
    return;
  }
  std::free(ptr);
}

void BackendSession::post_wait_release(const cb_op_args& args, int32_t timeout_ms) {
  cb_request* req = post(args);
  try {
    wait(req, timeout_ms);
  } catch (...) {
    release(req);
    throw;
  }
  release(req);
}

cb_request* BackendSession::post(const cb_op_args& args) {
  cb_request* req = nullptr;
  check(api_.post(comm_, &args, &req), "post");
  return req;
}

void BackendSession::wait(cb_request* req, int32_t timeout_ms) {
  check(api_.wait(req, timeout_ms), "wait");
}

bool BackendSession::test(cb_request* req) {
  int32_t done = 0;
  check(api_.test(req, &done), "test");
  return done != 0;
}

void BackendSession::group_start() { check(api_.group_start(comm_), "group_start"); }
void BackendSession::group_end() { check(api_.group_end(comm_), "group_end"); }

void BackendSession::abort() noexcept {
  if (comm_) {
    cb_error* err = api_.comm_abort ? api_.comm_abort(comm_) : api_.comm_destroy(comm_);
    if (err) api_.error_destroy(err);
    comm_ = nullptr;
  }
  if (backend_) {
    if (cb_error* err = api_.finalize(backend_)) api_.error_destroy(err);
    backend_ = nullptr;
  }
}

void BackendSession::destroy_comm() {
  cb_comm* c = comm_;
  comm_ = nullptr;
  if (c) check(api_.comm_destroy(c), "comm_destroy");
}

void BackendSession::abort_comm() {
  cb_comm* c = comm_;
  comm_ = nullptr;
  if (c) check(api_.comm_abort ? api_.comm_abort(c) : api_.comm_destroy(c),
               api_.comm_abort ? "comm_abort" : "comm_destroy");
}

void BackendSession::shutdown() {
  if (comm_) {
    cb_comm* c = comm_;
    comm_ = nullptr;
    check(api_.comm_destroy(c), "comm_destroy");
  }
  if (backend_) {
    cb_backend* b = backend_;
    backend_ = nullptr;
    check(api_.finalize(b), "finalize");
  }
}

}  // namespace commbench
