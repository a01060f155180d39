#include "agent/rendezvous_file.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "agent/agent_keys.h"
#include "bootstrap/deadline.h"
#include "bootstrap/socket.h"
#include "bootstrap/store.h"
#include "launch/rank_discovery.h"

namespace commbench {
namespace {

constexpr const char* kWhatToDo =
    "set COMMBENCH_RENDEZVOUS_FILE to a path in a folder only you can write, or give every task "
    "MASTER_ADDR and MASTER_PORT";

// A folder others may write without the sticky bit lets them rename or delete our file and put
// theirs in its place; with the sticky bit (like /tmp) they can only plant a file first, which
// the exclusive create below finds.
void check_folder(const std::filesystem::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    throw LaunchConfigError(fmt::format("cannot use {} for the rendezvous file: {}", dir.string(), std::strerror(errno)));
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0)
    throw LaunchConfigError(fmt::format(
        "the rendezvous file would be in {}, which other users can write (mode {:o}, no sticky bit): any of "
        "them could replace it and point the job elsewhere; {}",
        dir.string(), st.st_mode & 07777, kWhatToDo));
}

std::string owner_problem(const struct stat& st) {
  if (st.st_uid != ::geteuid())
    return fmt::format("it belongs to uid {}, not to you (uid {}): another user may have planted it", st.st_uid,
                       ::geteuid());
  if (!S_ISREG(st.st_mode)) return "it is not a regular file";
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return fmt::format("others may write it (mode {:o})", st.st_mode & 0777);
  return "";
}

struct RendezvousText {
  std::string job_id, host;
  uint16_t port = 0;
};

// What the file at `path` holds when it is what publish_rendezvous_file writes ("job-id host
// port"), so that replacing it loses nothing; nullopt otherwise.
std::optional<RendezvousText> read_rendezvous_text(const std::string& path, const struct stat& st) {
  if (st.st_size <= 0 || st.st_size > 512) return std::nullopt;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  char buf[513];
  const ssize_t n = ::read(fd, buf, sizeof(buf));
  ::close(fd);
  if (n <= 0) return std::nullopt;
  std::istringstream in(std::string(buf, static_cast<size_t>(n)));
  std::string id, host, extra;
  long port = 0;
  if (!(in >> id >> host >> port) || port <= 0 || port >= 65536 || (in >> extra)) return std::nullopt;
  return RendezvousText{id, host, static_cast<uint16_t>(port)};
}

// The owners of the sockets listening on `port` in this network namespace (/proc/net/tcp, tcp6),
// any address; `readable` false when neither table could be read (a restricted container).
struct ListenerOwners {
  bool readable = false;
  std::set<uid_t> uids;
};
ListenerOwners local_listeners(uint16_t port) {
  ListenerOwners out;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    if (!std::getline(in, line)) continue;  // the header, or nothing to read
    out.readable = true;
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string slot, local, remote, state, queues, timer, retransmits;
      unsigned long uid = 0;
      if (!(f >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid)) continue;
      const size_t colon = local.rfind(':');
      if (state != "0A" || colon == std::string::npos) continue;  // 0A: LISTEN
      if (std::strtoul(local.c_str() + colon + 1, nullptr, 16) == port) out.uids.insert(static_cast<uid_t>(uid));
    }
  }
  return out;
}

// Whether `host` is an address of this host (loopback, or one of its interfaces'): only then does
// this host's socket table say who listens there.
bool names_this_host(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return false;
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
  ifaddrs* ifs = nullptr;
  if (::getifaddrs(&ifs) != 0) return false;
  std::unique_ptr<ifaddrs, decltype(&::freeifaddrs)> interfaces(ifs, &::freeifaddrs);
  for (const addrinfo* a = list.get(); a; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      const auto& in = reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr;
      if ((ntohl(in.s_addr) >> 24) == 127) return true;
      for (const ifaddrs* i = ifs; i; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
            reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr == in.s_addr)
          return true;
    } else if (a->ai_family == AF_INET6) {
      const auto& in6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr;
      if (IN6_IS_ADDR_LOOPBACK(&in6)) return true;
      for (const ifaddrs* i = ifs; i; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET6 &&
            std::memcmp(&reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr, &in6, sizeof(in6)) == 0)
          return true;
    }
  }
  return false;
}

// Whether the job a rendezvous file names is still running (or a second rank 0 of this launch
// got there first): a commbench store answers at its address (StoreClient::probe: another
// program that took a stale file's port does not, nor one that accepts and stays silent). On
// this host it must also be one of this user's: another user who took that port (anyone can see
// which port a file named) cannot keep this user's jobs from starting.
bool still_listening(const RendezvousText& r) {
  if (names_this_host(r.host)) {
    const ListenerOwners owners = local_listeners(r.port);
    if (owners.readable && !owners.uids.count(::geteuid())) return false;
  }
  return StoreClient::probe(r.host, r.port, Millis(1000));
}

}  // namespace

PublishedFile publish_rendezvous_file(const std::string& path, const std::string& job_id, const std::string& host,
                             uint16_t port) {
  const std::filesystem::path file(path);
  const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  check_folder(dir);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (const std::string why = owner_problem(st); st.st_uid != ::geteuid() || !S_ISREG(st.st_mode))
      throw LaunchConfigError(fmt::format("the rendezvous file {} already exists and {}; remove it, or {}", path, why,
                                    kWhatToDo));
    const auto existing = read_rendezvous_text(path, st);
    if (!existing)
      throw LaunchConfigError(fmt::format("{} already exists and is not a rendezvous file (\"job-id host port\"); "
                                    "commbench replaces only a stale rendezvous file, so it was left as it is: "
                                    "name a new path in COMMBENCH_RENDEZVOUS_FILE, or remove the file",
                                    path));
    // Our own store may have been given a stale file's port: that one is not in use by another.
    const bool ours = existing->port == port && existing->host == host;
    if (!ours && still_listening(*existing))
      throw LaunchConfigError(fmt::format(
          "the rendezvous file {} is in use: it names a store that is still running ({}, job '{}'), another job's "
          "or a second rank 0 of this launch; replacing it would send that job's tasks here. Give this launch a "
          "COMMBENCH_RENDEZVOUS_FILE of its own, or wait for that job to end",
          path, format_endpoint(existing->host, existing->port), existing->job_id));
    ::unlink(path.c_str());  // ours, from an earlier job (a stale one readers skip by its job id)
  }
  // Written beside, then linked into place: link() fails if the name exists, so a file planted
  // between the check above and now is found, never overwritten or trusted; readers never see
  // half a file.
  const std::string tmp = fmt::format("{}.{}.tmp", path, ::getpid());
  ::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    throw LaunchConfigError(fmt::format("cannot create the rendezvous file {}: {}; {}", tmp, std::strerror(errno), kWhatToDo));
  const std::string text = fmt::format("{}\n{}\n{}\n", job_id, host, port);
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  const int linked = written ? ::link(tmp.c_str(), path.c_str()) : -1;
  const int err = errno;
  struct stat made {};
  const bool known = linked == 0 && ::stat(tmp.c_str(), &made) == 0;
  ::unlink(tmp.c_str());
  if (!written || linked != 0)
    throw LaunchConfigError(fmt::format("cannot create the rendezvous file {}: {}{}", path, std::strerror(err),
                                  err == EEXIST ? " (someone created it a moment ago: planted?)" : ""));
  PublishedFile f{path, 0, 0};
  if (known) {
    f.device = static_cast<uint64_t>(made.st_dev);
    f.inode = static_cast<uint64_t>(made.st_ino);
  }
  return f;
}

void remove_published_file(const PublishedFile& f) {
  struct stat st {};
  if (f.path.empty() || f.inode == 0 || ::lstat(f.path.c_str(), &st) != 0) return;
  if (static_cast<uint64_t>(st.st_dev) == f.device && static_cast<uint64_t>(st.st_ino) == f.inode)
    ::unlink(f.path.c_str());
}

std::pair<std::string, uint16_t> read_rendezvous_file(const std::string& path, const std::string& job_id,
                                                      Millis timeout, const std::function<bool()>& stop) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string seen;
  while (std::chrono::steady_clock::now() < deadline) {
    if (stop && stop()) throw LaunchInterrupted(interrupted_text(fmt::format("rank 0 to publish its address in {}", path)));
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
      struct stat st {};
      std::string text;
      if (::fstat(fd, &st) == 0) {
        if (const std::string why = owner_problem(st); !why.empty()) {
          ::close(fd);
          throw LaunchConfigError(fmt::format("refusing the rendezvous file {}: {}; remove it, or {}", path, why, kWhatToDo));
        }
        char buf[512];
        const ssize_t n = ::read(fd, buf, sizeof(buf));
        if (n > 0) text.assign(buf, static_cast<size_t>(n));
      }
      ::close(fd);
      std::istringstream in(text);
      std::string id, host;
      int port = 0;
      if (in >> id >> host >> port) {
        if (id == job_id && port > 0 && port < 65536) return {host, static_cast<uint16_t>(port)};
        seen = id;  // a stale file from another job: wait for ours
      }
    } else if (errno == ELOOP) {
      throw LaunchConfigError(fmt::format("refusing the rendezvous file {}: it is a symbolic link; remove it, or {}", path,
                                    kWhatToDo));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw LaunchError(fmt::format(
      "rank 0 did not publish its store address in {} within {} s{}; check that every task sees "
      "the same file system there (or set COMMBENCH_RENDEZVOUS_FILE, or MASTER_ADDR/MASTER_PORT)",
      path, timeout.count() / 1000.0, seen.empty() ? "" : fmt::format(" (the file there is from job '{}')", seen)));
}

}  // namespace commbench
