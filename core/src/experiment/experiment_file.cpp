#include "experiment/experiment_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace commbench {
namespace {

FileReadError fail(std::string why) {
  return FileReadError{"cannot read the experiment file: " + std::move(why)};
}

std::string open_error(int err) {
  std::string why = std::strerror(err);
  if (err == ELOOP) why += " (a symlink that points to itself, directly or through others): point it at the real file";
  if (err == EACCES) why += ": make it readable by this user (chmod a+r)";
  return why;
}

// A file type that cannot hold an experiment; nullptr for regular files and pipes.
const char* unreadable_kind(mode_t mode) {
  if (S_ISREG(mode) || S_ISFIFO(mode)) return nullptr;
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::variant<std::string, FileReadError> read_experiment_file(const std::string& path,
                                                              size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; reads are made blocking below.
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) return fail(open_error(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail(std::strerror(errno));
  if (const char* kind = unreadable_kind(st.st_mode))
    return fail(fmt::format("it is {}, not a file; give the path of a .toml experiment file", kind));
  if (S_ISREG(st.st_mode) && static_cast<size_t>(st.st_size) > max_bytes)
    return fail(fmt::format("it is {} bytes, more than the {} bytes an experiment file may have",
                            st.st_size, max_bytes));
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);

  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(std::strerror(errno));
    }
    if (n == 0) break;
    // A pipe, or a file growing while it is read: the size is checked as it arrives.
    if (text.size() + static_cast<size_t>(n) > max_bytes)
      return fail(fmt::format("more than the {} bytes an experiment file may have", max_bytes));
    text.append(buf, static_cast<size_t>(n));
  }
  // Said as such, not as the missing `name` and [[run]] of an empty experiment.
  if (text.empty() && S_ISFIFO(st.st_mode))
    return fail("it is a pipe that gave nothing: its writer wrote nothing, or none had it open yet (a FIFO "
                "opened before its writer reads empty); start the writer first, or pass the file itself");
  if (text.empty()) return fail("it is empty: an experiment needs at least name = \"...\" and one [[run]]");
  return text;
}

}  // namespace commbench
