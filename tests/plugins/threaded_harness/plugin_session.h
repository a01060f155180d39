// Loading a plugin .so and driving one rank of it: init, comm_create, post/wait, teardown,
// with every cb_error turned into a Status the test can assert on.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "commbench/backend.h"

namespace commbench::test {

// The plugin's table, from dlopen(RTLD_NOW | RTLD_LOCAL) + dlsym of the entry symbol. The
// library stays loaded for the process's lifetime (unloading during static destruction is a
// known crash source). Throws std::runtime_error with dlerror()'s text.
const cb_backend_api& load_plugin(const std::string& path);

struct Status {
  cb_status code = CB_OK;
  std::string message;
  bool ok() const { return code == CB_OK; }
};

// Takes ownership of `error` (destroys it).
Status to_status(const cb_backend_api& api, cb_error* error);

// One rank: a backend from init() and a communicator from comm_create(). Throws
// std::runtime_error if either fails.
class RankSession {
 public:
  RankSession(const cb_backend_api& api, const cb_host_services& host, int32_t timeout_ms = 30000);
  ~RankSession();
  RankSession(const RankSession&) = delete;
  RankSession& operator=(const RankSession&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  const cb_backend_api& api() const { return api_; }
  cb_backend* backend() const { return backend_; }
  cb_comm* comm() const { return comm_; }

  // post + wait + request_free.
  Status run(const cb_op_args& args);
  // The ABI's one-call path (1.1): post + wait without a request object.
  Status complete(const cb_op_args& args, int32_t timeout_ms = -1);
  // post only; `request` is null unless the post succeeded.
  Status post(const cb_op_args& args, cb_request** request);
  Status wait(cb_request* request, int32_t timeout_ms = -1);
  Status test(cb_request* request, bool* done);
  void free(cb_request* request) { api_.request_free(request); }

  std::map<std::string, std::string> metadata() const;

  // comm_destroy / comm_abort now rather than comm_destroy at destruction (either frees the
  // communicator: the session has none afterwards).
  Status destroy_comm();
  Status abort_comm();

 private:
  const cb_backend_api& api_;
  int rank_;
  int world_size_;
  cb_backend* backend_ = nullptr;
  cb_comm* comm_ = nullptr;
};

// Runs `body` on world_size threads, one RankSession each (each with its own backend: the
// gloo plugin allows several init() per process), and returns every failure: exceptions from
// a rank's body or setup, as "rank r: message". Empty means all ranks passed.
std::vector<std::string> run_ranks(const std::string& plugin_path, int world_size,
                                   const std::vector<std::pair<std::string, std::string>>& options,
                                   const std::function<void(RankSession&)>& body);

// cb_op_args with struct_size filled and host memory.
cb_op_args make_args(cb_op op, const void* sendbuf, void* recvbuf, size_t count, cb_dtype dtype,
                     cb_redop redop = CB_REDOP_SUM, int32_t root = 0);

}  // namespace commbench::test
