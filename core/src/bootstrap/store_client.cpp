// StoreClient over one TCP connection: synchronous request/response, each call bounded by a
// deadline. Blocking waits (GET, MULTI_GET) are timed by the server, which answers TIMEOUT with
// the keys still missing; the client only gives up on its own when that answer is overdue.
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "bootstrap/auth.h"
#include "bootstrap/byte_codec.h"
#include "bootstrap/socket.h"
#include "bootstrap/store.h"
#include "bootstrap/wire_protocol.h"

namespace commbench {
namespace {

using namespace std::chrono_literals;

// Floor for the deadline of calls that do not wait for keys (set, add, check, delete_prefix).
constexpr Millis kMinRequestTimeout = 30s;
// How long past a GET's own timeout the server's TIMEOUT answer may take (a store serving a
// thousand ranks can be a little late) before the client decides the server is stuck.
constexpr Millis kServerReplyGrace = 5s;
// First read of a reply, before its length is known: most replies are a few bytes, and a big
// zero-filled buffer per call would cost a thousand ranks page faults for nothing.
constexpr size_t kFirstRead = 4096;
constexpr size_t kMaxReadAhead = 16u << 20;
// A GET's OK reply up to its value: frame length, status, value length.
constexpr size_t kValueHeadBytes = wire::kFrameHeaderBytes + 1 + 4;
constexpr size_t kClientKeepBufferCapacity = 1u << 20;  // release bigger request/reply buffers
constexpr size_t kMaxKeysInMessage = 8;

uint32_t wire_timeout(Millis timeout) {
  if (timeout.count() < 0) return wire::kNoTimeout;
  return static_cast<uint32_t>(std::min<int64_t>(timeout.count(), wire::kNoTimeout - 1));
}

// "'a', 'b' and 3 more" (a thousand missing keys would drown the useful part of the message).
std::string list_keys(const std::vector<std::string>& keys) {
  std::string out;
  for (size_t i = 0; i < keys.size() && i < kMaxKeysInMessage; ++i) {
    out += fmt::format("{}'{}'", i == 0 ? "" : ", ", keys[i]);
  }
  if (keys.size() > kMaxKeysInMessage) {
    out += fmt::format(" and {} more", keys.size() - kMaxKeysInMessage);
  }
  return out;
}

// Where a GET's value goes when it is received straight from the socket: a large value (a
// host's gathered table) then skips the reply buffer and the copy out of it. `received` says
// whether that happened; if not, the reply is in the returned frame as usual.
struct ValueTarget {
  Bytes* value = nullptr;
  bool* received = nullptr;
};

class TcpStoreClient final : public StoreClient {
 public:
  TcpStoreClient(UniqueFd fd, std::string endpoint, Millis request_timeout)
      : fd_(std::move(fd)), endpoint_(std::move(endpoint)), request_timeout_(request_timeout) {}

  void hello(const std::string& token);

  std::string local_address() const override { return fd_.valid() ? local_host(fd_.get()) : ""; }

  void set_stop_check(StopCheck stop) override { stop_ = std::move(stop); }

  void set(const std::string& key, const Bytes& value) override {
    auto reply = round_trip(wire::SetRequest{key, value}, request_deadline(), "SET", key);
    expect_ok(reply, "SET", key);
  }

  Bytes get(const std::string& key, Millis timeout) override {
    auto deadline = Deadline::after(timeout);
    Bytes value;
    bool received = false;
    auto reply = round_trip(wire::GetRequest{wire_timeout(timeout), key},
                            deadline.extended(kServerReplyGrace), "GET", key,
                            ValueTarget{&value, &received});
    if (received) return value;
    if (reply.status == wire::Status::Timeout) throw_timeout(reply, {key}, timeout, "GET");
    expect_ok(reply, "GET", key);
    if (!wire::decode_value(reply.payload, value)) throw_malformed("GET");
    return value;
  }

  std::vector<Bytes> multi_get(const std::vector<std::string>& keys, Millis timeout) override {
    std::vector<Bytes> values;
    auto payload = multi_get_payload(keys, timeout);
    if (!wire::decode_values(payload, values) || values.size() != keys.size()) {
      throw_malformed("MULTI_GET");
    }
    return values;
  }

  void multi_get_each(const std::vector<std::string>& keys, Millis timeout,
                      const ValueSink& sink) override {
    auto payload = multi_get_payload(keys, timeout);
    // Validate the whole reply before the sink sees any of it.
    std::vector<std::span<const uint8_t>> views;
    if (!wire::decode_value_views(payload, views) || views.size() != keys.size()) {
      throw_malformed("MULTI_GET");
    }
    for (size_t i = 0; i < views.size(); ++i) sink(i, views[i].data(), views[i].size());
  }

  int64_t add(const std::string& key, int64_t delta) override {
    auto reply = round_trip(wire::AddRequest{key, delta}, request_deadline(), "ADD", key);
    expect_ok(reply, "ADD", key);
    int64_t value = 0;
    if (!wire::decode_int(reply.payload, value)) throw_malformed("ADD");
    return value;
  }

  bool check(const std::string& key) override {
    auto reply = round_trip(wire::CheckRequest{key}, request_deadline(), "CHECK", key);
    expect_ok(reply, "CHECK", key);
    bool exists = false;
    if (!wire::decode_bool(reply.payload, exists)) throw_malformed("CHECK");
    return exists;
  }

  size_t delete_prefix(const std::string& prefix) override {
    auto reply =
        round_trip(wire::DeletePrefixRequest{prefix}, request_deadline(), "DELETE_PREFIX", prefix);
    expect_ok(reply, "DELETE_PREFIX", prefix);
    uint64_t count = 0;
    if (!wire::decode_count(reply.payload, count)) throw_malformed("DELETE_PREFIX");
    return static_cast<size_t>(count);
  }

 private:
  Deadline request_deadline() const { return Deadline::after(request_timeout_); }

  // MULTI_GET round trip up to the OK payload (valid until the next call).
  std::span<const uint8_t> multi_get_payload(const std::vector<std::string>& keys, Millis timeout) {
    auto deadline = Deadline::after(timeout);
    const std::string what = keys.empty() ? std::string("no keys") : list_keys(keys);
    auto reply = round_trip(wire::MultiGetRequest{wire_timeout(timeout), keys},
                            deadline.extended(kServerReplyGrace), "MULTI_GET", what);
    if (reply.status == wire::Status::Timeout) throw_timeout(reply, keys, timeout, "MULTI_GET");
    expect_ok(reply, "MULTI_GET", what);
    return reply.payload;
  }

  // Sends one request and reads its reply; the returned payload lives in reply_ until the next
  // call. `op` and `subject` only serve error messages.
  wire::ResponseFrame round_trip(const wire::Request& request, const Deadline& deadline,
                                 const char* op, const std::string& subject,
                                 ValueTarget target = {});
  void send_all(const wire::Bytes& bytes, const Deadline& deadline, const char* op,
                const std::string& subject);
  wire::ResponseFrame receive(const Deadline& deadline, const char* op, const std::string& subject,
                              ValueTarget target);
  // The rest of a GET's OK reply, whose head (and maybe more) is in reply_[0, filled), read
  // into *target.value; false (nothing read) unless reply_ holds exactly such a head.
  bool receive_value(size_t filled, ValueTarget target, const Deadline& deadline, const char* op,
                     const std::string& subject);
  // One recv of at most `want` bytes into `to`, waiting until the deadline; > 0 or throws.
  size_t recv_some(uint8_t* to, size_t want, const Deadline& deadline, const char* op,
                   const std::string& subject);
  // Waits for `events` on the socket; false when the deadline passed first.
  bool wait_ready(short events, const Deadline& deadline, const char* op,
                  const std::string& subject);

  void expect_ok(const wire::ResponseFrame& reply, const char* op, const std::string& subject);
  // HELLO and AUTH: a REJECTED answer says why this client may not use the store.
  void expect_admitted(const wire::ResponseFrame& reply, const char* op);
  [[noreturn]] void throw_timeout(const wire::ResponseFrame& reply,
                                  const std::vector<std::string>& keys, Millis timeout,
                                  const char* op);
  [[noreturn]] void throw_malformed(const char* op);
  // Marks the connection unusable (the byte stream may be out of step) and throws.
  [[noreturn]] void fail(StoreError::Code code, const std::string& message);

  UniqueFd fd_;
  std::string endpoint_;
  Millis request_timeout_;
  std::string broken_;  // why the connection is unusable; empty while it is fine
  StopCheck stop_;      // set_stop_check
  wire::Bytes request_;
  wire::Bytes reply_;
};

void TcpStoreClient::hello(const std::string& token) {
  // Mutual authentication (bootstrap/auth.h): nothing that depends on the token leaves this
  // process before the server has proven that it knows the token too.
  std::vector<uint8_t> client_nonce;
  try {
    client_nonce = random_bytes(kAuthNonceBytes);
  } catch (const std::exception& e) {
    fail(StoreError::Code::Connection, fmt::format("cannot greet the bootstrap store at {}: {}", endpoint_, e.what()));
  }
  auto reply = round_trip(wire::HelloRequest{wire::kProtocolVersion, client_nonce}, request_deadline(), "HELLO",
                          endpoint_);
  expect_admitted(reply, "HELLO");
  uint32_t version = 0;
  wire::Bytes server_nonce, server_proof;
  if (!wire::decode_hello(reply.payload, version, server_nonce, server_proof)) throw_malformed("HELLO");
  if (server_nonce.size() != kAuthNonceBytes ||
      !proof_matches(auth_proof(token, AuthRole::Server, client_nonce, server_nonce), server_proof))
    fail(StoreError::Code::Rejected,
         fmt::format("the listener at {} did not prove that it knows this job's token, so nothing was sent "
                     "to it: either this process has the wrong token (COMMBENCH_JOB_TOKEN, "
                     "COMMBENCH_STORE_TOKEN) or that address is not this job's store (a stale or planted "
                     "rendezvous file, another job on the port)",
                     endpoint_));
  const Sha256Digest proof = auth_proof(token, AuthRole::Client, client_nonce, server_nonce);
  auto answer = round_trip(wire::AuthRequest{wire::Bytes(proof.begin(), proof.end())}, request_deadline(), "AUTH",
                           endpoint_);
  expect_admitted(answer, "AUTH");
}

void TcpStoreClient::expect_admitted(const wire::ResponseFrame& reply, const char* op) {
  if (reply.status == wire::Status::Rejected) {
    std::string reason;
    wire::decode_reason(reply.payload, reason);
    fail(StoreError::Code::Rejected,
         fmt::format("the bootstrap store at {} rejected this client: {}", endpoint_, reason));
  }
  expect_ok(reply, op, endpoint_);
}

wire::ResponseFrame TcpStoreClient::round_trip(const wire::Request& request,
                                               const Deadline& deadline, const char* op,
                                               const std::string& subject, ValueTarget target) {
  if (!broken_.empty()) {
    throw StoreError(StoreError::Code::Connection,
                     fmt::format("the connection to the bootstrap store at {} is unusable after "
                                 "an earlier error ({}); connect a new client",
                                 endpoint_, broken_));
  }
  request_.clear();
  wire::encode_request(request, request_);
  send_all(request_, deadline, op, subject);
  // Keep a large request buffer (an allgather of big blocks) from outliving the call.
  if (request_.capacity() > kClientKeepBufferCapacity) wire::Bytes().swap(request_);
  return receive(deadline, op, subject, target);
}

bool TcpStoreClient::wait_ready(short events, const Deadline& deadline, const char* op,
                                const std::string& subject) {
  pollfd p{fd_.get(), events, 0};
  while (true) {
    int64_t wait_ms = deadline.remaining_ms();
    // With a stop check, wait in slices: the signal it watches may go to another thread.
    if (stop_) wait_ms = wait_ms < 0 ? kStopCheckInterval.count() : std::min(wait_ms, kStopCheckInterval.count());
    const int rc = ::poll(&p, 1, static_cast<int>(wait_ms));
    if (rc > 0) return true;  // readable, writable, or an error the next recv/send reports
    if (rc < 0 && errno != EINTR) {
      fail(StoreError::Code::Connection,
           fmt::format("{} '{}': waiting on the connection to {} failed: {}", op, subject,
                       endpoint_, errno_text(errno)));
    }
    if (stop_ && stop_())
      fail(StoreError::Code::Interrupted,
           fmt::format("{} '{}': stopped while waiting on the bootstrap store at {}", op, subject, endpoint_));
    if (rc == 0 && deadline.passed()) return false;
  }
}

void TcpStoreClient::send_all(const wire::Bytes& bytes, const Deadline& deadline, const char* op,
                              const std::string& subject) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd_.get(), bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n >= 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      fail(StoreError::Code::Connection,
           fmt::format("lost the connection to the bootstrap store at {} while sending {} '{}' "
                       "({}); the store lives in rank 0's agent: check whether it exited",
                       endpoint_, op, subject, errno_text(errno)));
    }
    if (!wait_ready(POLLOUT, deadline, op, subject)) {
      fail(StoreError::Code::Timeout,
           fmt::format("the bootstrap store at {} did not accept {} '{}' in time; it may be "
                       "overloaded or stuck",
                       endpoint_, op, subject));
    }
  }
}

wire::ResponseFrame TcpStoreClient::receive(const Deadline& deadline, const char* op,
                                            const std::string& subject, ValueTarget target) {
  reply_.clear();
  if (reply_.capacity() > kClientKeepBufferCapacity) wire::Bytes().swap(reply_);  // the last one was big
  // reply_ only grows while a reply arrives and `filled` counts what arrived: resizing it to
  // what recv returned after every call made the next resize zero-fill the whole rest of the
  // frame again (32 MiB of memset for a 2 MiB reply arriving in 64 KiB pieces).
  size_t filled = 0;
  while (true) {
    const std::span<const uint8_t> arrived(reply_.data(), filled);
    auto parsed = wire::parse_response(arrived, std::numeric_limits<uint32_t>::max());
    if (auto* frame = std::get_if<wire::Parsed<wire::ResponseFrame>>(&parsed)) {
      if (frame->consumed != filled) {
        fail(StoreError::Code::Protocol,
             fmt::format("the bootstrap store at {} sent bytes nobody asked for after the reply "
                         "to {}; is that port really a commbench store?",
                         endpoint_, op));
      }
      return frame->message;
    }
    if (auto* err = std::get_if<wire::ParseError>(&parsed)) {
      fail(StoreError::Code::Protocol,
           fmt::format("malformed reply to {} from {}: {}; is that port really a commbench "
                       "store of the same version?",
                       op, endpoint_, err->message));
    }
    if (target.value && receive_value(filled, target, deadline, op, subject)) return {};
    // Read up to the end of the frame once its length is known, but never allocate more than
    // kMaxReadAhead beyond what actually arrived, whatever length the peer claims. A GET reads
    // no further than the head of its reply until receive_value has seen it.
    size_t want = kFirstRead;
    if (uint32_t length = 0; wire::ByteReader(arrived).u32(length)) {
      want = std::min(wire::kFrameHeaderBytes + length - filled, kMaxReadAhead);
      if (target.value && filled < kValueHeadBytes) want = std::min(want, kValueHeadBytes - filled);
    }
    if (reply_.size() < filled + want) reply_.resize(filled + want);
    filled += recv_some(reply_.data() + filled, want, deadline, op, subject);
  }
}

bool TcpStoreClient::receive_value(size_t filled, ValueTarget target, const Deadline& deadline,
                                   const char* op, const std::string& subject) {
  if (filled < kValueHeadBytes) return false;
  wire::ByteReader head(std::span<const uint8_t>(reply_.data(), kValueHeadBytes));
  uint32_t length = 0, size = 0;
  uint8_t status = 0;
  head.u32(length);
  head.u8(status);
  head.u32(size);
  const size_t already = filled - kValueHeadBytes;
  // Anything else (an error, a malformed length) is left to the parser and its messages.
  if (status != static_cast<uint8_t>(wire::Status::Ok) || length != 1 + 4 + uint64_t{size} ||
      already > size) {
    return false;
  }
  Bytes& value = *target.value;
  value.resize(std::min<size_t>(size, already + kMaxReadAhead));
  std::copy_n(reply_.data() + kValueHeadBytes, already, value.data());
  for (size_t got = already; got < size;) {
    if (value.size() == got) value.resize(std::min<size_t>(size, got + kMaxReadAhead));
    got += recv_some(value.data() + got, value.size() - got, deadline, op, subject);
  }
  *target.received = true;
  return true;
}

size_t TcpStoreClient::recv_some(uint8_t* to, size_t want, const Deadline& deadline,
                                 const char* op, const std::string& subject) {
  while (true) {
    const ssize_t n = ::recv(fd_.get(), to, want, 0);
    const int err = errno;
    if (n > 0) return static_cast<size_t>(n);
    if (n < 0 && err == EINTR) continue;
    if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK)) {
      if (wait_ready(POLLIN, deadline, op, subject)) continue;
      fail(StoreError::Code::Timeout,
           fmt::format("the bootstrap store at {} did not answer {} '{}' in time (its own "
                       "timeout reply is overdue); it may be overloaded or stuck",
                       endpoint_, op, subject));
    }
    fail(StoreError::Code::Connection,
         fmt::format("lost the connection to the bootstrap store at {} while waiting for the "
                     "reply to {} '{}' ({}); the store lives in rank 0's agent: check whether it "
                     "exited or was stopped",
                     endpoint_, op, subject,
                     n == 0 ? std::string("closed by the store") : errno_text(err)));
  }
}

void TcpStoreClient::expect_ok(const wire::ResponseFrame& reply, const char* op,
                               const std::string& subject) {
  if (reply.status == wire::Status::Ok) return;
  std::string reason;
  if (reply.status == wire::Status::Timeout || !wire::decode_reason(reply.payload, reason)) {
    throw_malformed(op);
  }
  if (reply.status == wire::Status::Rejected) {
    fail(StoreError::Code::Rejected, fmt::format("the bootstrap store at {} rejected {} '{}': {}",
                                                 endpoint_, op, subject, reason));
  }
  // ERROR: the request was refused but the connection stays in step and usable.
  throw StoreError(
      StoreError::Code::Protocol,
      fmt::format("the bootstrap store at {} refused {} '{}': {}", endpoint_, op, subject, reason));
}

void TcpStoreClient::throw_timeout(const wire::ResponseFrame& reply,
                                   const std::vector<std::string>& keys, Millis timeout,
                                   const char* op) {
  std::vector<uint32_t> indices;
  if (!wire::decode_missing(reply.payload, indices)) throw_malformed(op);
  std::vector<std::string> missing;
  for (uint32_t i : indices) {
    if (i >= keys.size()) throw_malformed(op);
    missing.push_back(keys[i]);
  }
  const std::string which = keys.size() == 1 ? fmt::format("key {}", list_keys(missing))
                                             : fmt::format("{} of {} keys ({})", missing.size(),
                                                           keys.size(), list_keys(missing));
  // The connection is still in step: the server answered, so the client stays usable.
  throw StoreError(StoreError::Code::Timeout,
                   fmt::format("timed out after {} ms waiting for {} in the bootstrap store at {}; "
                               "whoever should set it (another rank or agent) has not: check "
                               "that it is alive and uses the same run prefix",
                               timeout.count(), which, endpoint_),
                   std::move(missing));
}

void TcpStoreClient::throw_malformed(const char* op) {
  fail(StoreError::Code::Protocol,
       fmt::format("malformed reply to {} from the bootstrap store at {}; is that port really a "
                   "commbench store of the same version?",
                   op, endpoint_));
}

void TcpStoreClient::fail(StoreError::Code code, const std::string& message) {
  broken_ = message;
  fd_.reset();
  throw StoreError(code, message);
}

}  // namespace

bool StoreClient::probe(const std::string& host, uint16_t port, Millis timeout) {
  try {
    UniqueFd fd = connect_tcp(host, port, Deadline::after(timeout));
    TcpStoreClient client(std::move(fd), format_endpoint(host, port), timeout);
    client.hello("commbench-store-probe: a token no job has");
    return true;  // cannot happen with that token; a store all the same
  } catch (const StoreError& e) {
    return e.code() == StoreError::Code::Rejected;
  } catch (const std::exception&) {
    return false;
  }
}

std::unique_ptr<StoreClient> StoreClient::connect(const std::string& host, uint16_t port,
                                                  Millis timeout, const std::string& token, StopCheck stop) {
  const auto deadline = Deadline::after(timeout);
  const Millis request_timeout =
      timeout.count() < 0 ? Millis(-1) : std::max(timeout, kMinRequestTimeout);
  // A store closes clients that have not authenticated a second after connecting while its
  // pre-authentication slots are full (docs/bootstrap.md, "Limits"). At the start of a large job
  // on a busy host, a real client can be one of them: it connects again, with backoff and
  // jitter, until the deadline. A rejection (the wrong token) is final.
  auto backoff = std::chrono::milliseconds(10);
  for (;;) {
    if (stop && stop())
      throw StoreError(StoreError::Code::Interrupted,
                       fmt::format("stopped while connecting to the bootstrap store at {}", format_endpoint(host, port)));
    UniqueFd fd = connect_tcp(host, port, deadline, stop);
    auto client =
        std::make_unique<TcpStoreClient>(std::move(fd), format_endpoint(host, port), request_timeout);
    client->set_stop_check(stop);
    try {
      client->hello(token);
      return client;
    } catch (const StoreError& e) {
      if (e.code() != StoreError::Code::Connection || deadline.passed()) throw;
    }
    const auto pause = backoff / 2 + std::chrono::milliseconds(random_bytes(1)[0] % (backoff.count() / 2 + 1));
    std::this_thread::sleep_for(deadline.unlimited() ? pause : std::min<Millis>(pause, Millis(deadline.remaining_ms())));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(250));
  }
}

}  // namespace commbench
