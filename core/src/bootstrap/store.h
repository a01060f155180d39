// The bootstrap store: a small TCP key-value service hosted by rank 0's agent (like torch's
// TCPStore). Workers reach it through StoreClient; plugins only through the ABI host services,
// which the worker implements with Bootstrap (bootstrap/collectives.h).
//
// Every blocking call takes a timeout and throws StoreError(Timeout) when it passes, so a rank
// that never arrives cannot hang anybody. docs/bootstrap.md documents the wire protocol.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace commbench {

using Bytes = std::vector<uint8_t>;
using Millis = std::chrono::milliseconds;

class StoreError : public std::runtime_error {
 public:
  // Interrupted: the caller's stop check (StoreClient::set_stop_check) ended a wait.
  enum class Code { Timeout, Connection, Protocol, Rejected, Interrupted };
  StoreError(Code code, const std::string& what) : std::runtime_error(what), code_(code) {}
  // A Timeout that knows which keys never appeared (Bootstrap turns them into rank numbers).
  StoreError(Code code, const std::string& what, std::vector<std::string> missing_keys)
      : std::runtime_error(what), code_(code), missing_keys_(std::move(missing_keys)) {}
  Code code() const { return code_; }
  const std::vector<std::string>& missing_keys() const { return missing_keys_; }

  // Why a store could not listen, for the caller's advice (set by listen_tcp).
  enum class ListenProblem { None, PortInUse, NameDoesNotResolve, AddressNotHere, Other };
  StoreError(const std::string& what, ListenProblem problem)
      : std::runtime_error(what), code_(Code::Connection), listen_problem_(problem) {}
  ListenProblem listen_problem() const { return listen_problem_; }

 private:
  Code code_;
  std::vector<std::string> missing_keys_;
  ListenProblem listen_problem_ = ListenProblem::None;
};

struct StoreServerOptions {
  std::string bind_host = "127.0.0.1";  // never 0.0.0.0 unless asked
  uint16_t port = 0;                    // 0: pick a free port
  std::string token;                    // non-empty: clients must prove they know it
  size_t max_message_bytes = 64u << 20; // larger messages are rejected (after authentication)
  // Limits on what clients that have not authenticated can hold (docs/bootstrap.md, "Limits"):
  // at most this many at once (a new one closes the oldest), each closed when it has not
  // authenticated within auth_timeout.
  size_t max_unauthenticated = 128;
  Millis auth_timeout{10000};
  // Unparsed input over all connections; past it one connection at a time may finish its message.
  size_t max_buffered_bytes = 256u << 20;
  // File descriptors the server leaves free below the process's limit (RLIMIT_NOFILE) for the
  // rest of the process: the agent's own workers need pipes and log files.
  int reserved_fds = 64;
  // Where the server reports rejected clients and malformed messages; empty: stderr.
  std::function<void(const std::string&)> log;
};

// Serves on a background thread until stop() or destruction.
class StoreServer {
 public:
  static std::unique_ptr<StoreServer> start(const StoreServerOptions& opts);
  virtual ~StoreServer() = default;
  virtual uint16_t port() const = 0;
  virtual std::string host() const = 0;
  virtual void stop() = 0;
  // Sets `key` from the process hosting the server, with no socket in between: a host agent
  // keeps the gathered table here for the agents below it in the tree (bootstrap/host_tree.h),
  // and a second copy through a client would double its traffic. Waiters are woken as by a
  // client's SET; it is applied by the event loop, so a client may see it a moment later.
  // Thread-safe. set_shared keeps `value` itself (no copy): it must not change afterwards.
  void set(const std::string& key, Bytes value) {
    set_shared(key, std::make_shared<const Bytes>(std::move(value)));
  }
  virtual void set_shared(const std::string& key, std::shared_ptr<const Bytes> value) = 0;
  // Number of keys currently held (for tests: keys of finished runs must be deleted).
  virtual size_t key_count() const = 0;
  // Unparsed input held over all connections (for tests: the limits of StoreServerOptions).
  virtual size_t buffered_input_bytes() const = 0;
  // CPU time the serving thread has used so far, for benches and tests (what a simulated host's
  // store costs its host: bench/run_bootstrap_scale.sh). Thread-safe; zero once stop() has begun
  // or the thread has ended.
  virtual std::chrono::nanoseconds cpu_time() const = 0;
};

// Not thread-safe: one thread at a time per client (each worker thread or rank connects its
// own). A negative timeout means "no limit". Calls that do not wait for keys (set, add, check,
// delete_prefix) give up after the larger of the connect timeout and 30 s. After a lost
// connection, a rejection, a malformed reply, or a timeout the server itself did not answer, the
// client is unusable: every later call throws StoreError(Connection); connect a new one. (A key
// timeout or a refused request, e.g. ADD on a non-counter, leaves it usable.)
class StoreClient {
 public:
  // Whether a wait should end now: a signal to the process, typically. Looked at every
  // kStopCheckInterval while a call waits on the store.
  using StopCheck = std::function<bool()>;
  static constexpr Millis kStopCheckInterval{200};

  // Retries the connection until `timeout` (the server may start a moment later), or until
  // `stop` says so (StoreError(Interrupted)); `stop` then stays the client's stop check.
  static std::unique_ptr<StoreClient> connect(const std::string& host, uint16_t port,
                                              Millis timeout, const std::string& token = "",
                                              StopCheck stop = {});
  // Whether a commbench store answers at host:port within `timeout` (one attempt, no retry):
  // it replies to HELLO, and with a token nobody has, rejects. A closed port, a listener that
  // hangs up or stays silent, or another protocol: false.
  static bool probe(const std::string& host, uint16_t port, Millis timeout);
  virtual ~StoreClient() = default;

  virtual void set(const std::string& key, const Bytes& value) = 0;
  // Waits until the key exists; throws StoreError(Timeout) after `timeout`.
  virtual Bytes get(const std::string& key, Millis timeout) = 0;
  // Waits for all keys and returns their values in order (one round trip).
  virtual std::vector<Bytes> multi_get(const std::vector<std::string>& keys, Millis timeout) = 0;
  // multi_get that hands value i to sink(i, bytes) in order instead of returning copies; the
  // bytes are only valid during the call. Bootstrap's allgather copies blocks straight into the
  // caller's buffer this way (at 1024 ranks that saves a million allocations). The default
  // implementation goes through multi_get, so other StoreClients need not override it.
  using ValueSink = std::function<void(size_t index, const uint8_t* data, size_t size)>;
  virtual void multi_get_each(const std::vector<std::string>& keys, Millis timeout,
                              const ValueSink& sink) {
    auto values = multi_get(keys, timeout);
    for (size_t i = 0; i < values.size(); ++i) sink(i, values[i].data(), values[i].size());
  }
  // Atomically adds `delta` to the integer stored at key (missing = 0) and returns the result.
  // Counters are 8-byte little-endian values: get() returns those bytes; ADD on a key holding
  // anything else throws StoreError(Protocol).
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // Non-blocking existence check.
  virtual bool check(const std::string& key) = 0;
  // Deletes every key that starts with `prefix`; returns how many.
  virtual size_t delete_prefix(const std::string& prefix) = 0;
  // While `stop` is set, a call that waits on the store (a GET for a key nobody has set yet, a
  // reply that is late) ends with StoreError(Interrupted) within kStopCheckInterval of `stop`
  // returning true, and the client is unusable afterwards (the reply may still be on its way).
  // An empty check turns this off. Agents set it around waits that only other tasks can end.
  virtual void set_stop_check(StopCheck stop) { (void)stop; }
  // The local address of the connection (numeric; "" when unknown): an address of this host
  // that the store's host reaches, where a worker may serve its own host's ranks.
  virtual std::string local_address() const { return ""; }
};

}  // namespace commbench
