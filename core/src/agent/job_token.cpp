#include "agent/job_token.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "bootstrap/auth.h"
#include "bootstrap/deadline.h"
#include "bootstrap/socket.h"

namespace commbench {
namespace {

// A file name part from a launcher's job id ("prterun-node1-123@1" -> "prterun-node1-123_1").
std::string safe_name(const std::string& s) {
  std::string out;
  for (char ch : s) out += std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.' ? ch : '_';
  return out.substr(0, 128);
}

// <TMPDIR or /tmp>/commbench-<uid>, created 0700; refused when someone else owns it or can enter it
// (another user could then read the token, or swap the file for one of theirs).
std::filesystem::path private_dir() {
  const char* tmp = std::getenv("TMPDIR");
  const std::filesystem::path dir =
      std::filesystem::path(tmp && *tmp ? tmp : "/tmp") / fmt::format("commbench-{}", ::geteuid());
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw LaunchConfigError(fmt::format("cannot create {} for the job token: {}", dir.string(), std::strerror(errno)));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & 077) != 0)
    throw LaunchConfigError(fmt::format(
        "{} is not a directory that only you can use ({}); remove it, or give every task the same "
        "COMMBENCH_JOB_TOKEN",
        dir.string(),
        S_ISLNK(st.st_mode)  ? "it is a symbolic link"
        : !S_ISDIR(st.st_mode) ? "it is not a directory"
                               : fmt::format("owner uid {}, mode {:o}", st.st_uid, st.st_mode & 0777)));
  return dir;
}

}  // namespace

std::string read_job_token(const EnvMap& env) {
  if (auto it = env.find("COMMBENCH_JOB_TOKEN"); it != env.end() && !it->second.empty()) return it->second;
  auto file = env.find("COMMBENCH_JOB_TOKEN_FILE");
  if (file == env.end() || file->second.empty()) return "";
  // Opened first, then checked (fstat): what is read is what was checked. An open that fails
  // (EACCES, ENOENT) says so; it must not read as an empty token.
  const std::string& path = file->second;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    throw LaunchConfigError(fmt::format("COMMBENCH_JOB_TOKEN_FILE={}: cannot read it: {}", path, std::strerror(errno)));
  struct stat st {};
  std::string problem;
  if (::fstat(fd, &st) != 0) problem = fmt::format("cannot read it: {}", std::strerror(errno));
  else if (!S_ISREG(st.st_mode)) problem = S_ISDIR(st.st_mode) ? "it is a directory, not a file" : "it is not a regular file";
  else if (st.st_uid != ::geteuid())
    problem = fmt::format("it is owned by uid {}, not by you (uid {}): whoever owns it can change the token", st.st_uid,
                          ::geteuid());
  else if (st.st_mode & (S_IRWXG | S_IRWXO))
    problem = fmt::format("it can be read by others (mode {:o}); run chmod 600 on it", st.st_mode & 0777);
  std::string token;
  if (problem.empty()) {
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) problem = fmt::format("cannot read it: {}", std::strerror(errno));
    else token.assign(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (!problem.empty()) throw LaunchConfigError(fmt::format("COMMBENCH_JOB_TOKEN_FILE={}: {}", path, problem));
  token = token.substr(0, token.find('\n'));  // the first line
  if (token.empty()) throw LaunchConfigError(fmt::format("COMMBENCH_JOB_TOKEN_FILE={} is empty", path));
  return token;
}

std::string generate_job_token() {
  std::vector<uint8_t> bytes;
  try {
    bytes = random_bytes(32);
  } catch (const std::exception& e) {
    throw LaunchError(fmt::format("cannot draw a random job token ({}); set COMMBENCH_JOB_TOKEN", e.what()));
  }
  std::string hex;
  for (uint8_t b : bytes) hex += fmt::format("{:02x}", b);
  return hex;
}

HostTokenFile::HostTokenFile(const std::string& job_key)
    : path_(private_dir() / fmt::format("store-{}.token", safe_name(job_key))) {}

HostTokenFile::~HostTokenFile() { withdraw(); }

void HostTokenFile::withdraw() {
  if (written_) ::unlink(path_.c_str());
  written_ = false;
}

void HostTokenFile::publish(const std::string& token) {
  // Written beside and renamed, so a reader never sees half a token.
  const std::filesystem::path tmp = path_.string() + fmt::format(".{}.tmp", ::getpid());
  ::unlink(tmp.c_str());  // left by a killed process that had this pid (the directory is ours)
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    throw LaunchConfigError(fmt::format("cannot write the job token to {}: {}", tmp.string(), std::strerror(errno)));
  const std::string line = token + "\n";
  const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw LaunchConfigError(fmt::format("cannot write the job token to {}: {}", path_.string(), std::strerror(err)));
  }
  written_ = true;
}

std::string HostTokenFile::read(std::chrono::steady_clock::time_point deadline,
                                const std::function<bool()>& stop) const {
  for (;;) {
    if (stop && stop()) return "";
    const int fd = ::open(path_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      struct stat st {};
      char buf[256];
      const bool mine = ::fstat(fd, &st) == 0 && st.st_uid == ::geteuid() && (st.st_mode & 077) == 0;
      const ssize_t n = mine ? ::read(fd, buf, sizeof(buf)) : -1;
      ::close(fd);
      if (n > 0) {
        std::string token(buf, static_cast<size_t>(n));
        token = token.substr(0, token.find('\n'));
        if (!token.empty()) return token;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string read_host_token(const HostTokenFile& file, const std::string& host, uint16_t port,
                            std::chrono::steady_clock::time_point deadline, const std::function<bool()>& stop) {
  std::optional<std::chrono::steady_clock::time_point> listening_since;
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    const std::string token = file.read(std::min(deadline, now + std::chrono::seconds(1)), stop);
    if (!token.empty() || (stop && stop()) || std::chrono::steady_clock::now() >= deadline) return token;
    bool listening = false;
    try {
      connect_tcp(host, port, Deadline::after(std::chrono::milliseconds(200)));
      listening = true;
    } catch (const std::exception&) {
    }
    if (!listening) {
      listening_since.reset();
    } else if (!listening_since) {
      listening_since = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - *listening_since >= std::chrono::seconds(2)) {
      throw LaunchConfigError(fmt::format(
          "rank 0's store on port {} is running but its job token file {} is not there: its launch has started with "
          "every task it counts, so this task was started twice, or late, or belongs to another launch on the same "
          "port. Start each task once (or give this launch its own MASTER_PORT); every task of a one-host launch "
          "must also run as the same user with the same TMPDIR (or set COMMBENCH_JOB_TOKEN, the same random string "
          "for every task)",
          port, file.path().string()));
    }
  }
}

}  // namespace commbench
