// Shared helpers for the store and bootstrap tests: a server on an ephemeral loopback port, a
// captured server log, and a raw socket for sending bytes the real client never would.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/store.h"
#include "bootstrap/wire_protocol.h"

namespace commbench::test {

using namespace std::chrono_literals;

inline Bytes bytes_of(const std::string& s) {
  return Bytes(s.begin(), s.end());
}
inline std::string string_of(const Bytes& b) {
  return std::string(b.begin(), b.end());
}

// Collects what the server logs, so tests can check that rejections are reported.
class CapturedLog {
 public:
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mutex_);
      lines_.push_back(line);
    };
  }
  bool contains(const std::string& needle) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& line : lines_) {
      if (line.find(needle) != std::string::npos) return true;
    }
    return false;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

inline std::unique_ptr<StoreServer> start_server(CapturedLog* log = nullptr,
                                                 const std::string& token = "",
                                                 size_t max_message_bytes = 64u << 20) {
  StoreServerOptions opts;
  opts.token = token;
  opts.max_message_bytes = max_message_bytes;
  if (log) opts.log = log->sink();
  return StoreServer::start(opts);
}

inline std::unique_ptr<StoreClient> connect_to(const StoreServer& server,
                                               const std::string& token = "") {
  return StoreClient::connect(server.host(), server.port(), 5s, token);
}

// A blocking listening socket on 127.0.0.1 and a port the kernel picks (written to `port`): a
// stand-in for something other than a store at the store's address.
inline int loopback_listener(uint16_t& port) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listener, 4) != 0)
    return -1;
  socklen_t len = sizeof(addr);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  port = ntohs(addr.sin_port);
  return listener;
}

// A blocking loopback socket that speaks raw bytes to the server.
class RawSocket {
 public:
  explicit RawSocket(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~RawSocket() { ::close(fd_); }
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;

  bool connected() const { return connected_; }

  bool send_bytes(const Bytes& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  bool send_request(const wire::Request& request) {
    Bytes out;
    wire::encode_request(request, out);
    return send_bytes(out);
  }
  // The whole handshake (HELLO, then AUTH with the proof for `token`), as the real client does it.
  bool hello(const std::string& token = "") {
    const Bytes nonce = random_bytes(kAuthNonceBytes);
    if (!send_request(wire::HelloRequest{wire::kProtocolVersion, nonce})) return false;
    auto reply = read_reply(2s);
    if (reply.empty() || reply[wire::kFrameHeaderBytes] != uint8_t(wire::Status::Ok)) return false;
    auto frame = std::get<wire::Parsed<wire::ResponseFrame>>(wire::parse_response(reply, 1u << 20));
    uint32_t version = 0;
    Bytes server_nonce, server_proof;
    if (!wire::decode_hello(frame.message.payload, version, server_nonce, server_proof)) return false;
    const Sha256Digest proof = auth_proof(token, AuthRole::Client, nonce, server_nonce);
    if (!send_request(wire::AuthRequest{Bytes(proof.begin(), proof.end())})) return false;
    reply = read_reply(2s);
    return !reply.empty() && reply[wire::kFrameHeaderBytes] == uint8_t(wire::Status::Ok);
  }

  // Reads one whole reply frame (header included); empty on close or timeout. Bytes of a
  // following reply that arrived in the same segment are kept for the next call.
  Bytes read_reply(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      auto parsed = wire::parse_response(pending_, 1u << 30);
      if (auto* frame = std::get_if<wire::Parsed<wire::ResponseFrame>>(&parsed)) {
        const auto end = pending_.begin() + static_cast<ptrdiff_t>(frame->consumed);
        Bytes reply(pending_.begin(), end);
        pending_.erase(pending_.begin(), end);
        return reply;
      }
      if (std::holds_alternative<wire::ParseError>(parsed)) return {};
      uint8_t chunk[4096];
      if (!wait_readable(deadline)) return {};
      const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
      if (n <= 0) return {};
      pending_.insert(pending_.end(), chunk, chunk + n);
    }
  }

  // True when the server closed the connection within `timeout` (any bytes before are skipped).
  bool closed_by_peer(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    uint8_t chunk[4096];
    while (wait_readable(deadline)) {
      const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
      if (n <= 0) return true;
    }
    return false;
  }

 private:
  bool wait_readable(std::chrono::steady_clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(left.count())) > 0;
  }
  int fd_ = -1;
  bool connected_ = false;
  Bytes pending_;
};

}  // namespace commbench::test
