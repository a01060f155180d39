#include "plugin_session.h"

#include <dlfcn.h>

#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "in_process_host.h"

namespace commbench::test {
namespace {
constexpr int32_t kTeardownBarrierMs = 60000;
}  // namespace

const cb_backend_api& load_plugin(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, const cb_backend_api*> loaded;
  std::lock_guard lock(mutex);
  if (auto it = loaded.find(path); it != loaded.end()) return *it->second;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) throw std::runtime_error("dlopen(" + path + "): " + dlerror());
  auto entry = reinterpret_cast<cb_entry_fn>(dlsym(handle, CB_ENTRY_SYMBOL));
  if (entry == nullptr) throw std::runtime_error(path + " does not export " CB_ENTRY_SYMBOL);
  const cb_backend_api* api = entry();
  if (api == nullptr || api->abi_major != CB_ABI_MAJOR)
    throw std::runtime_error(path + ": missing table or ABI major mismatch");
  loaded[path] = api;
  return *api;
}

Status to_status(const cb_backend_api& api, cb_error* error) {
  if (error == nullptr) return {};
  Status status{api.error_code(error), api.error_message(error)};
  api.error_destroy(error);
  return status;
}

RankSession::RankSession(const cb_backend_api& api, const cb_host_services& host, int32_t timeout_ms)
    : api_(api), rank_(host.rank), world_size_(host.world_size) {
  Status status = to_status(api_, api_.init(&host, &backend_));
  if (!status.ok()) throw std::runtime_error("init failed: " + status.message);
  status = to_status(api_, api_.comm_create(backend_, timeout_ms, &comm_));
  if (!status.ok()) {
    to_status(api_, api_.finalize(backend_));
    throw std::runtime_error("comm_create failed: " + status.message);
  }
}

RankSession::~RankSession() {
  if (comm_ != nullptr) to_status(api_, api_.comm_destroy(comm_));
  if (backend_ != nullptr) to_status(api_, api_.finalize(backend_));
}

Status RankSession::post(const cb_op_args& args, cb_request** request) {
  *request = nullptr;
  return to_status(api_, api_.post(comm_, &args, request));
}

Status RankSession::wait(cb_request* request, int32_t timeout_ms) {
  return to_status(api_, api_.wait(request, timeout_ms));
}

Status RankSession::test(cb_request* request, bool* done) {
  int32_t flag = 0;
  Status status = to_status(api_, api_.test(request, &flag));
  *done = flag != 0;
  return status;
}

Status RankSession::run(const cb_op_args& args) {
  cb_request* request = nullptr;
  Status status = post(args, &request);
  if (status.ok()) status = wait(request);
  if (request != nullptr) api_.request_free(request);
  return status;
}

Status RankSession::complete(const cb_op_args& args, int32_t timeout_ms) {
  if (api_.complete == nullptr) return Status{CB_ERR_UNIMPLEMENTED, "the plugin's table has no complete"};
  return to_status(api_, api_.complete(comm_, &args, timeout_ms));
}

Status RankSession::destroy_comm() {
  cb_comm* comm = comm_;
  comm_ = nullptr;
  return to_status(api_, api_.comm_destroy(comm));
}

Status RankSession::abort_comm() {
  cb_comm* comm = comm_;
  comm_ = nullptr;
  return to_status(api_, api_.comm_abort(comm));
}

std::map<std::string, std::string> RankSession::metadata() const {
  std::map<std::string, std::string> facts;
  auto emit = [](void* ctx, const char* key, const char* value) {
    (*static_cast<std::map<std::string, std::string>*>(ctx))[key] = value;
  };
  Status status = to_status(api_, api_.get_metadata(backend_, emit, &facts));
  if (!status.ok()) throw std::runtime_error("get_metadata failed: " + status.message);
  return facts;
}

std::vector<std::string> run_ranks(const std::string& plugin_path, int world_size,
                                   const std::vector<std::pair<std::string, std::string>>& options,
                                   const std::function<void(RankSession&)>& body) {
  const cb_backend_api& api = load_plugin(plugin_path);
  InProcessHost host(world_size);
  std::vector<const cb_host_services*> services;
  for (int rank = 0; rank < world_size; ++rank) services.push_back(&host.services(rank, options));

  std::mutex mutex;
  std::vector<std::string> failures;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world_size; ++rank) {
    threads.emplace_back([&, rank] {
      std::optional<RankSession> session;
      try {
        session.emplace(api, *services[rank]);
        body(*session);
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex);
        failures.push_back("rank " + std::to_string(rank) + ": " + e.what());
      }
      // Like the core's end-of-case allgather: no rank tears down its connections while a
      // peer may still be receiving the last messages it sent.
      const cb_host_services& host = *services[rank];
      host.bootstrap_barrier(host.ctx, kTeardownBarrierMs);
      session.reset();
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& warning : host.warnings()) failures.push_back("plugin warning: " + warning);
  return failures;
}

cb_op_args make_args(cb_op op, const void* sendbuf, void* recvbuf, size_t count, cb_dtype dtype,
                     cb_redop redop, int32_t root) {
  cb_op_args args{};
  args.struct_size = sizeof(cb_op_args);
  args.op = op;
  args.sendbuf = sendbuf;
  args.recvbuf = recvbuf;
  args.count = count;
  args.dtype = dtype;
  args.redop = redop;
  args.root = root;
  args.mem_type = CB_MEM_HOST;
  return args;
}

}  // namespace commbench::test
