// Thin POSIX TCP helpers shared by the store server and client: an owning file descriptor,
// listening, connecting with retries, socket options. Errors are StoreError(Connection) with
// the endpoint and the system's reason in the message.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "bootstrap/deadline.h"

namespace commbench {

// Owns one file descriptor; closes it on destruction. Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(std::exchange(o.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// "host:port", with IPv6 literals bracketed.
std::string format_endpoint(const std::string& host, uint16_t port);

// strerror(err) without the thread-safety problem of strerror.
std::string errno_text(int err);

// A non-blocking listening socket on host:port (port 0: the kernel picks one), SO_REUSEADDR set.
UniqueFd listen_tcp(const std::string& host, uint16_t port);

// The port a bound socket really has (resolves port 0).
uint16_t bound_port(int fd);

// Connects to host:port, retrying refused/unreachable attempts with backoff until `deadline`
// (the server may start a moment after its clients). The returned socket is non-blocking with
// TCP_NODELAY set.
// Retries until `deadline`; throws StoreError(Interrupted) as soon as `stop` says so.
UniqueFd connect_tcp(const std::string& host, uint16_t port, const Deadline& deadline,
                     const std::function<bool()>& stop = {});

void set_nonblocking(int fd);
void set_nodelay(int fd);

// The address this end of a connected socket has (numeric; "" when unknown): the interface
// through which the peer is reached.
std::string local_host(int fd);

// The peer's "address:port" for log messages ("?" when unknown).
std::string peer_name(int fd);

}  // namespace commbench
