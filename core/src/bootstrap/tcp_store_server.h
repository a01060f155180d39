// The TCP store server's class, shared by its two halves: store_server.cpp (the event loop,
// connections and their bytes) and store_server_requests.cpp (what each request does).
// Internal to the bootstrap: users get it through StoreServer::start (bootstrap/store.h).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "bootstrap/input_budget.h"
#include "bootstrap/log_limiter.h"
#include "bootstrap/pending_auth.h"
#include "bootstrap/server_connection.h"
#include "bootstrap/socket.h"
#include "bootstrap/store.h"
#include "bootstrap/store_state.h"
#include "bootstrap/wire_protocol.h"

namespace commbench::store_server_detail {

using Clock = std::chrono::steady_clock;

constexpr ConnId kListenId = 0;
constexpr ConnId kWakeId = 1;
constexpr ConnId kFirstConnId = 2;
constexpr size_t kReadChunk = 64 * 1024;
constexpr size_t kMaxReadPerWakeup = 1 << 20;      // fairness between busy connections
constexpr size_t kServerKeepBufferCapacity = 64 * 1024;  // release bigger buffers once drained
constexpr auto kAcceptPauseOnEmfile = std::chrono::milliseconds(100);

class TcpStoreServer final : public StoreServer {
 public:
  explicit TcpStoreServer(const StoreServerOptions& opts);
  ~TcpStoreServer() override { stop(); }

  uint16_t port() const override { return port_; }
  std::string host() const override { return opts_.bind_host; }
  size_t key_count() const override { return key_count_.load(std::memory_order_relaxed); }
  size_t buffered_input_bytes() const override { return buffered_seen_.load(std::memory_order_relaxed); }
  std::chrono::nanoseconds cpu_time() const override;
  void stop() override;
  void set_shared(const std::string& key, std::shared_ptr<const Bytes> value) override;

 private:
  void apply_local_sets();
  void run();
  void accept_all();
  void on_event(ConnId id, uint32_t events);
  void read_input(StoreConnection& c);
  void process_input(StoreConnection& c);
  void execute(StoreConnection& c, wire::Request&& request);
  void hello(StoreConnection& c, const wire::HelloRequest& m);
  void authenticate(StoreConnection& c, const wire::AuthRequest& m);
  void reject(StoreConnection& c, const std::string& reason);
  size_t input_cap(const StoreConnection& c) const;
  bool may_read(StoreConnection& c);
  void rearm_throttled();
  void expire_unauthenticated();
  void update_accepting();
  void wait_for(StoreConnection& c, wire::Opcode op, std::vector<std::string> keys,
                uint32_t timeout_ms);
  // The OK reply to a GET or MULTI_GET whose keys all exist (`values`, from find_all(keys)):
  // built once and shared by every connection that asked the same; a GET's value is not copied
  // into it but sent after it.
  struct ValuesReply {
    std::shared_ptr<const wire::Bytes> bytes;
    std::shared_ptr<const wire::Bytes> value;
  };
  ValuesReply values_reply(wire::Opcode op, const std::vector<std::string>& keys,
                           const std::vector<const wire::Bytes*>& values);
  void send_shared(StoreConnection& c, ValuesReply reply);
  void finish_woken(const std::vector<StoreState::WaiterId>& woken);
  void expire_waiters();
  void flush(StoreConnection& c);
  void update_interest(StoreConnection& c);
  void close_connection(ConnId id);
  void pause_accepting(int err);
  int wait_timeout_ms() const;
  // Logs a line of the loop thread, at most LogLimiter's burst per window.
  void log(const std::string& message);
  void write_log(const std::string& message) const;

  StoreServerOptions opts_;
  size_t input_cap_;  // most unparsed input one authenticated connection may hold
  int fd_ceiling_;    // accepted descriptors must stay below this (RLIMIT_NOFILE - reserved_fds)
  UniqueFd listen_fd_;
  UniqueFd epoll_fd_;
  UniqueFd wake_fd_;
  uint16_t port_ = 0;
  std::atomic<size_t> key_count_{0};
  std::atomic<size_t> buffered_seen_{0};  // buffered_, published by the loop for tests
  std::atomic<bool> stopping_{false};
  std::once_flag stop_once_;
  std::thread thread_;
  // thread_'s CPU clock, taken once at start: cpu_time() must not touch thread_'s handle, which
  // stop() may be joining at that moment. Once the thread is gone the clock reads fail (zero).
  std::optional<clockid_t> loop_clock_;
  std::mutex local_sets_mutex_;
  std::vector<std::pair<std::string, StoreState::Value>> local_sets_;  // set() by the host, for the loop

  // Owned by the loop thread.
  StoreState state_;
  std::unordered_map<ConnId, std::unique_ptr<StoreConnection>> conns_;
  std::deque<ConnId> resume_;  // connections unparked this round: parse their next request
  ConnId next_id_ = kFirstConnId;
  std::vector<uint8_t> read_scratch_ = std::vector<uint8_t>(kReadChunk);
  std::vector<const wire::Bytes*> values_;  // scratch for find_all
  std::optional<Clock::time_point> accept_paused_until_;
  bool accepting_ = true;  // the listener is in the epoll set with EPOLLIN
  PendingAuthentications pending_;
  InputBudget budget_;  // unparsed input over all connections
  LogLimiter log_limiter_;  // loop thread's; stop() reads it after the loop has ended
};

}  // namespace commbench::store_server_detail
