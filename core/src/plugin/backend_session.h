// One plugin's backend and communicator inside a worker, with every ABI call checked: a
// non-NULL cb_error becomes a PluginError (plugin/plugin_error.h) with its status and message.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "commbench/backend.h"
#include "plugin/plugin_error.h"

namespace commbench {

class BackendSession {
 public:
  // `api` must outlive the session (the plugin is never unloaded).
  explicit BackendSession(const cb_backend_api& api) : api_(api) {}
  ~BackendSession();
  BackendSession(const BackendSession&) = delete;
  BackendSession& operator=(const BackendSession&) = delete;

  void init(const cb_host_services* host);
  void create_comm(int32_t timeout_ms);
  cb_capabilities capabilities() const;  // the set this process really has
  std::vector<std::pair<std::string, std::string>> metadata() const;

  void* alloc(cb_mem mem, size_t bytes);  // plugin allocator if it has one, else host memory
  void free(cb_mem mem, void* ptr);

  cb_request* post(const cb_op_args& args);
  void wait(cb_request* req, int32_t timeout_ms);
  bool test(cb_request* req);  // true once complete; drives progress where the backend needs it
  void release(cb_request* req) { api_.request_free(req); }
  // One op to completion: the ABI's `complete` where the plugin has it (inline: the timed loops'
  // only call per op), else post, wait, release (the request released on every path).
  void complete(const cb_op_args& args, int32_t timeout_ms) {
    if (api_.complete != nullptr) [[likely]] check(api_.complete(comm_, &args, timeout_ms), "complete");
    else post_wait_release(args, timeout_ms);
  }
  // ABI 1.3, stream-ordered backends: the op on args.stream with no request (completion is what
  // the stream says). Where the plugin has no enqueue, post + release: only for callers that then
  // synchronise on the stream themselves (OpExecutor's event-timed batch and graph capture).
  bool has_enqueue() const { return api_.enqueue != nullptr; }
  bool has_complete() const { return api_.complete != nullptr; }
  void enqueue(const cb_op_args& args) {
    if (api_.enqueue) check(api_.enqueue(comm_, &args), "enqueue");
    else release(post(args));
  }
  bool has_groups() const { return api_.group_start && api_.group_end; }
  void group_start();
  void group_end();

  // Tear down without waiting for peers (after a failure); safe to call more than once.
  void abort() noexcept;
  void shutdown();  // comm_destroy + finalize
  // The communicator alone, the backend kept (conformance creates and destroys it repeatedly).
  void destroy_comm();
  void abort_comm();  // comm_abort, or comm_destroy where the plugin has none

  cb_backend* backend() const { return backend_; }
  cb_comm* comm() const { return comm_; }

  const cb_backend_api& api() const { return api_; }

 private:
  void post_wait_release(const cb_op_args& args, int32_t timeout_ms);
  void check(cb_error* err, const char* what) const { commbench::check(api_, err, what); }
  const cb_backend_api& api_;
  cb_backend* backend_ = nullptr;
  cb_comm* comm_ = nullptr;
};

}  // namespace commbench
