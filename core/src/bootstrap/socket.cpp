#include "bootstrap/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "bootstrap/store.h"

namespace commbench {
namespace {

using AddrInfoList = std::unique_ptr<addrinfo, decltype(&freeaddrinfo)>;

// Resolves host:port for TCP. Returns nullptr and fills `error` when the name does not resolve.
AddrInfoList resolve(const std::string& host, uint16_t port, bool passive, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* list = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &list);
  if (rc != 0) {
    error = fmt::format("cannot resolve '{}': {}", host, gai_strerror(rc));
    return AddrInfoList(nullptr, &freeaddrinfo);
  }
  return AddrInfoList(list, &freeaddrinfo);
}

// Errors after which trying again later can succeed (server not up yet, route flapping).
bool worth_retrying(int err) {
  return err == ECONNREFUSED || err == ETIMEDOUT || err == ENETUNREACH || err == EHOSTUNREACH ||
         err == ECONNRESET || err == EAGAIN || err == EINTR || err == EADDRNOTAVAIL;
}

// One non-blocking connect attempt bounded by `deadline`; returns the errno (0 = connected), or
// ECANCELED when `stop` says so while the attempt is pending (looked at every 200 ms).
int try_connect(const addrinfo& ai, const Deadline& deadline, const std::function<bool()>& stop, UniqueFd& out) {
  UniqueFd fd(
      ::socket(ai.ai_family, ai.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai.ai_protocol));
  if (!fd.valid()) return errno;
  if (::connect(fd.get(), ai.ai_addr, ai.ai_addrlen) != 0) {
    if (errno != EINPROGRESS) return errno;
    pollfd p{fd.get(), POLLOUT, 0};
    int rc;
    for (;;) {
      int64_t wait_ms = deadline.remaining_ms();
      if (stop) wait_ms = wait_ms < 0 ? 200 : std::min<int64_t>(wait_ms, 200);
      rc = ::poll(&p, 1, static_cast<int>(wait_ms));
      if (rc > 0 || (rc < 0 && errno != EINTR)) break;
      if (stop && stop()) return ECANCELED;
      if (rc == 0 && deadline.passed()) break;
    }
    if (rc == 0) return ETIMEDOUT;
    if (rc < 0) return errno;
    int err = 0;
    socklen_t len = sizeof(err);
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
    if (err != 0) return err;
  }
  set_nodelay(fd.get());
  out = std::move(fd);
  return 0;
}

}  // namespace

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

std::string format_endpoint(const std::string& host, uint16_t port) {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

std::string errno_text(int err) {
  char buf[256];
  // GNU strerror_r may return a static string instead of filling buf.
  return std::string(strerror_r(err, buf, sizeof(buf)));
}

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    throw StoreError(StoreError::Code::Connection,
                     "cannot make a socket non-blocking: " + errno_text(errno));
  }
}

void set_nodelay(int fd) {
  // Store messages are small request/response pairs: Nagle would add up to 40 ms per round trip.
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

UniqueFd listen_tcp(const std::string& host, uint16_t port) {
  const std::string where = format_endpoint(host, port);
  std::string error;
  auto list = resolve(host, port, /*passive=*/true, error);
  if (!list)
    throw StoreError(fmt::format("bootstrap store cannot listen on {}: {}", where, error),
                     StoreError::ListenProblem::NameDoesNotResolve);
  int last_err = 0;
  for (addrinfo* ai = list.get(); ai; ai = ai->ai_next) {
    UniqueFd fd(
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd.valid()) {
      last_err = errno;
      continue;
    }
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd.get(), SOMAXCONN) != 0) {
      last_err = errno;
      continue;
    }
    return fd;
  }
  const auto problem = last_err == EADDRINUSE      ? StoreError::ListenProblem::PortInUse
                       : last_err == EADDRNOTAVAIL ? StoreError::ListenProblem::AddressNotHere
                                                   : StoreError::ListenProblem::Other;
  throw StoreError(fmt::format("bootstrap store cannot listen on {}: {}{}", where, errno_text(last_err),
                               problem == StoreError::ListenProblem::PortInUse        ? "; pick another port"
                               : problem == StoreError::ListenProblem::AddressNotHere ? "; check that the address belongs to this host"
                                                                                      : ""),
                   problem);
}

uint16_t bound_port(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return 0;
}

std::string peer_name(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "?";
  char host[NI_MAXHOST];
  char port[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof(host), port, sizeof(port),
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "?";
  }
  return format_endpoint(host, static_cast<uint16_t>(std::stoi(port)));
}

std::string local_host(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "";
  char host[NI_MAXHOST];
  if (getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof(host), nullptr, 0, NI_NUMERICHOST) != 0)
    return "";
  return host;
}

UniqueFd connect_tcp(const std::string& host, uint16_t port, const Deadline& deadline,
                     const std::function<bool()>& stop) {
  using namespace std::chrono;
  const auto started = steady_clock::now();
  auto backoff = milliseconds(10);
  std::string last_error = "no attempt was made";
  auto fail = [&](const char* hint) {
    const auto waited = duration_cast<milliseconds>(steady_clock::now() - started).count();
    return StoreError(StoreError::Code::Connection,
                      fmt::format("cannot connect to the bootstrap store at {} (gave up after {} "
                                  "ms): {}; {}",
                                  format_endpoint(host, port), waited, last_error, hint));
  };
  const auto stopped = [&] {
    return StoreError(StoreError::Code::Interrupted,
                      fmt::format("stopped while connecting to the bootstrap store at {}", format_endpoint(host, port)));
  };
  while (true) {
    if (stop && stop()) throw stopped();
    auto list = resolve(host, port, /*passive=*/false, last_error);
    for (addrinfo* ai = list.get(); ai; ai = ai->ai_next) {
      UniqueFd fd;
      const int err = try_connect(*ai, deadline, stop, fd);
      if (err == 0) return fd;
      if (err == ECANCELED) throw stopped();
      last_error = errno_text(err);
      if (!worth_retrying(err)) throw fail("check the host and port");
    }
    if (deadline.passed()) break;
    // Sleep, but never past the deadline: the last attempt should happen right at it.
    const auto left = milliseconds(deadline.remaining_ms());
    std::this_thread::sleep_for(deadline.unlimited() ? backoff : std::min(backoff, left));
    backoff = std::min(backoff * 2, milliseconds(250));
  }
  throw fail("is rank 0's agent running, and are host and port right?");
}

}  // namespace commbench
