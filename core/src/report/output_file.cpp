#include "report/output_file.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace commbench {
namespace {

std::string_view what_to_do(int err) {
  switch (err) {
    case ENOSPC:
    case EDQUOT: return "free some space or choose an output_dir (or -o) on another file system";
    case EROFS: return "the file system is read-only: choose an output_dir (or -o) on a writable one";
    case EACCES:
    case EPERM: return "this user may not write there: fix the permissions or choose another output_dir (or -o)";
    case ENOTDIR: return "a part of the path is a file, not a folder: choose another output_dir (or -o)";
    default: return "check the output_dir in the experiment file (or -o)";
  }
}

// Writes all of `data` at the current offset; false with errno set when a call fails.
bool write_fully(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) {  // cannot happen for regular files; do not spin if it does
      errno = EIO;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Where write_file_atomically writes before the rename.
std::filesystem::path temporary_for(const std::filesystem::path& path) {
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  return tmp;
}

}  // namespace

void throw_output_error(const std::filesystem::path& path, int err, std::string_view action) {
  throw OutputError(path, err,
                    fmt::format("cannot {} '{}': {}; {}", action, path.string(), std::strerror(err),
                                what_to_do(err)));
}

LineFile::LineFile(std::filesystem::path path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) throw_output_error(path_, errno, "create");
}

LineFile::~LineFile() {
  if (fd_ >= 0) ::close(fd_);
}

void LineFile::write_line(std::string_view line) {
  if (failed_)
    throw OutputError(path_, failed_errno_,
                      fmt::format("'{}' is no longer written after an earlier failure ({})",
                                  path_.string(), std::strerror(failed_errno_)));
  // One buffer, one write in the common case: the line and its '\n' land together. A write
  // goes to the kernel at once (no stdio buffer), so a crash of this process keeps every line
  // before it; surviving a crash of the machine would need fsync, not worth its cost per case.
  std::string record;
  record.reserve(line.size() + 1);
  record.append(line);
  record += '\n';
  if (write_fully(fd_, record)) {
    good_size_ += static_cast<off_t>(record.size());
    ++lines_;
    return;
  }
  const int err = errno;
  failed_ = true;
  failed_errno_ = err;
  // Part of the record may be on disk (the disk filled up mid-line): cut it off so that every
  // line of the file still parses.
  if (::ftruncate(fd_, good_size_) != 0 || ::lseek(fd_, good_size_, SEEK_SET) < 0)
    throw OutputError(path_, err,
                      fmt::format("cannot write '{}': {}; and its last line could not be cut back "
                                  "({}): drop the last line when reading it",
                                  path_.string(), std::strerror(err), std::strerror(errno)));
  throw_output_error(path_, err);
}

bool reserve_space_for(const std::filesystem::path& path, uint64_t bytes) {
  const std::filesystem::path tmp = temporary_for(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return false;
  const bool ok = ::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(bytes)) == 0;
  ::close(fd);
  if (!ok) ::unlink(tmp.c_str());
  return ok;
}

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  const std::filesystem::path tmp = temporary_for(path);
  // No O_TRUNC: blocks reserved for it (reserve_space_for) are written into, not given back to
  // a full disk first; the end is cut off below.
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
  // Reported under the file it was for: the caller decides what was lost by that name.
  if (fd < 0) throw_output_error(path, errno, fmt::format("create '{}' for", tmp.filename().string()));
  auto fail = [&](int err) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw_output_error(path, err);
  };
  if (!write_fully(fd, content)) fail(errno);
  if (::ftruncate(fd, static_cast<off_t>(content.size())) != 0) fail(errno);
  // Give back what the reservation held beyond the content (blocks past the end of a file
  // survive ftruncate on some file systems). Not supported everywhere: best effort.
  ::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(content.size()),
              static_cast<off_t>(1) << 40);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw_output_error(path, err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw_output_error(path, err, "rename a temporary file to");
  }
}

}  // namespace commbench
