// The host side of the plugin ABI for N ranks that are threads of one process: bootstrap
// collectives and the key/value store live in memory behind one mutex. Lets a test drive a
// real plugin .so with several ranks without processes, launchers or sockets of its own.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "commbench/backend.h"

namespace commbench::test {

class InProcessHost {
 public:
  explicit InProcessHost(int world_size);
  ~InProcessHost();
  InProcessHost(const InProcessHost&) = delete;
  InProcessHost& operator=(const InProcessHost&) = delete;

  int world_size() const { return world_size_; }

  // Services for one rank; valid while this host lives. `options` are copied.
  const cb_host_services& services(int rank,
                                   const std::vector<std::pair<std::string, std::string>>& options = {});

  // Messages the plugin logged at WARN or ERROR, prefixed with the rank.
  std::vector<std::string> warnings() const;

  // How often the plugin called each bootstrap service, all ranks together, by its field name
  // in cb_host_services ("kv_get", "bootstrap_allgather", ...).
  std::map<std::string, int> calls() const;

 private:
  struct Endpoint;  // one rank's view: owns its cb_host_services and options

  cb_status kv_set(const std::string& key, const void* value, size_t length);
  cb_status kv_get(const std::string& key, void* value, size_t capacity, size_t* length,
                   int32_t timeout_ms);
  cb_status allgather(Endpoint& self, const void* send, size_t bytes, void* recv, int32_t timeout_ms);
  cb_status broadcast(Endpoint& self, void* buffer, size_t bytes, int32_t root, int32_t timeout_ms);
  void log(int rank, cb_log_level level, const char* message);
  void count(const char* service);

  static Endpoint& endpoint(void* ctx);

  const int world_size_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::vector<char>> store_;
  std::vector<std::string> warnings_;
  std::map<std::string, int> calls_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
};

}  // namespace commbench::test
