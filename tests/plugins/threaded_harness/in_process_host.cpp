#include "in_process_host.h"

#include <chrono>
#include <cstring>
#include <stdexcept>

namespace commbench::test {

struct InProcessHost::Endpoint {
  InProcessHost* host = nullptr;
  int rank = 0;
  uint64_t collectives_entered = 0;  // names this rank's next bootstrap collective
  std::vector<std::pair<std::string, std::string>> option_strings;
  std::vector<cb_option> options;
  cb_host_services services{};
};

InProcessHost::InProcessHost(int world_size) : world_size_(world_size), endpoints_(world_size) {
  if (world_size < 1) throw std::invalid_argument("world size must be at least 1");
}

InProcessHost::~InProcessHost() = default;

InProcessHost::Endpoint& InProcessHost::endpoint(void* ctx) { return *static_cast<Endpoint*>(ctx); }

const cb_host_services& InProcessHost::services(
    int rank, const std::vector<std::pair<std::string, std::string>>& options) {
  auto e = std::make_unique<Endpoint>();
  e->host = this;
  e->rank = rank;
  e->option_strings = options;
  for (const auto& [key, value] : e->option_strings)
    e->options.push_back(cb_option{sizeof(cb_option), key.c_str(), value.c_str()});

  cb_host_services& s = e->services;
  s.struct_size = sizeof(cb_host_services);
  s.ctx = e.get();
  s.rank = rank;
  s.world_size = world_size_;
  s.local_rank = rank;
  s.local_world_size = world_size_;
  s.options = e->options.data();
  s.num_options = e->options.size();
  s.log = [](void* ctx, cb_log_level level, const char* message) {
    Endpoint& self = endpoint(ctx);
    self.host->log(self.rank, level, message);
  };
  s.bootstrap_allgather = [](void* ctx, const void* send, size_t bytes, void* recv, int32_t timeout_ms) {
    Endpoint& self = endpoint(ctx);
    self.host->count("bootstrap_allgather");
    return self.host->allgather(self, send, bytes, recv, timeout_ms);
  };
  s.bootstrap_broadcast = [](void* ctx, void* buffer, size_t bytes, int32_t root, int32_t timeout_ms) {
    Endpoint& self = endpoint(ctx);
    self.host->count("bootstrap_broadcast");
    return self.host->broadcast(self, buffer, bytes, root, timeout_ms);
  };
  s.bootstrap_barrier = [](void* ctx, int32_t timeout_ms) {
    Endpoint& self = endpoint(ctx);
    self.host->count("bootstrap_barrier");
    return self.host->allgather(self, nullptr, 0, nullptr, timeout_ms);
  };
  s.kv_set = [](void* ctx, const char* key, const void* value, size_t length, int32_t) {
    endpoint(ctx).host->count("kv_set");
    return endpoint(ctx).host->kv_set(key, value, length);
  };
  s.kv_get = [](void* ctx, const char* key, void* value, size_t capacity, size_t* length, int32_t timeout_ms) {
    endpoint(ctx).host->count("kv_get");
    return endpoint(ctx).host->kv_get(key, value, capacity, length, timeout_ms);
  };

  std::lock_guard lock(mutex_);
  endpoints_.at(rank) = std::move(e);
  return endpoints_[rank]->services;
}

std::vector<std::string> InProcessHost::warnings() const {
  std::lock_guard lock(mutex_);
  return warnings_;
}

std::map<std::string, int> InProcessHost::calls() const {
  std::lock_guard lock(mutex_);
  return calls_;
}

void InProcessHost::count(const char* service) {
  std::lock_guard lock(mutex_);
  ++calls_[service];
}

void InProcessHost::log(int rank, cb_log_level level, const char* message) {
  if (level > CB_LOG_WARN) return;
  std::lock_guard lock(mutex_);
  warnings_.push_back("rank " + std::to_string(rank) + ": " + message);
}

cb_status InProcessHost::kv_set(const std::string& key, const void* value, size_t length) {
  {
    std::lock_guard lock(mutex_);
    const auto* bytes = static_cast<const char*>(value);
    store_[key].assign(bytes, bytes + length);
  }
  changed_.notify_all();
  return CB_OK;
}

cb_status InProcessHost::kv_get(const std::string& key, void* value, size_t capacity, size_t* length,
                                int32_t timeout_ms) {
  std::unique_lock lock(mutex_);
  const auto present = [&] { return store_.count(key) > 0; };
  if (timeout_ms < 0)
    changed_.wait(lock, present);
  else if (!changed_.wait_for(lock, std::chrono::milliseconds(timeout_ms), present))
    return CB_ERR_TIMEOUT;
  const std::vector<char>& stored = store_.at(key);
  *length = stored.size();
  std::memcpy(value, stored.data(), std::min(capacity, stored.size()));
  return CB_OK;
}

// Bootstrap collectives are built on the store: round n of rank r writes "__bootstrap/n/r".
// Ranks enter collectives in the same order, so n agrees across ranks.
cb_status InProcessHost::allgather(Endpoint& self, const void* send, size_t bytes, void* recv,
                                   int32_t timeout_ms) {
  const std::string round = "__bootstrap/" + std::to_string(self.collectives_entered++) + "/";
  kv_set(round + std::to_string(self.rank), send, bytes);
  for (int peer = 0; peer < world_size_; ++peer) {
    size_t length = 0;
    void* slot = bytes == 0 ? nullptr : static_cast<char*>(recv) + bytes * peer;
    char unused = 0;
    const cb_status status = kv_get(round + std::to_string(peer), slot != nullptr ? slot : &unused,
                                    bytes, &length, timeout_ms);
    if (status != CB_OK) return status;
    if (length != bytes) return CB_ERR_INVALID_ARGUMENT;
  }
  return CB_OK;
}

cb_status InProcessHost::broadcast(Endpoint& self, void* buffer, size_t bytes, int32_t root,
                                   int32_t timeout_ms) {
  const std::string key = "__bootstrap/" + std::to_string(self.collectives_entered++) + "/root";
  if (self.rank == root) return kv_set(key, buffer, bytes);
  size_t length = 0;
  const cb_status status = kv_get(key, buffer, bytes, &length, timeout_ms);
  return status != CB_OK ? status : (length == bytes ? CB_OK : CB_ERR_INVALID_ARGUMENT);
}

}  // namespace commbench::test
