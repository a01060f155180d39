// Writing result files safely: line files that only ever hold whole lines (a crash keeps every
// line already written; a failed write is rolled back) and whole files replaced atomically (a
// crash never leaves half a summary).
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace commbench {

// A results file or folder could not be created or written (disk full, read-only file system,
// permission, a path through a regular file). Typed so the job can stop cleanly and say what
// survived, instead of dying on an exception.
class OutputError : public std::runtime_error {
 public:
  OutputError(std::filesystem::path path, int error_number, const std::string& message)
      : std::runtime_error(message), path_(std::move(path)), errno_(error_number) {}
  const std::filesystem::path& path() const { return path_; }
  int error_number() const { return errno_; }  // errno of the failed call (ENOSPC, EROFS, ...)

 private:
  std::filesystem::path path_;
  int errno_;
};

// "cannot write '<path>': <strerror>; <what to do>" as an OutputError.
[[noreturn]] void throw_output_error(const std::filesystem::path& path, int err,
                                     std::string_view action = "write");

// A file written line by line; every line reaches the kernel before write_line returns, and the
// file only ever holds complete lines.
class LineFile {
 public:
  // Creates or truncates `path`. Throws OutputError naming the path on failure.
  explicit LineFile(std::filesystem::path path);
  ~LineFile();
  LineFile(const LineFile&) = delete;
  LineFile& operator=(const LineFile&) = delete;

  // Writes `line` plus '\n' with write(2). On failure (disk full, I/O error) the file is cut
  // back to its last complete line, and OutputError is thrown; after one failure every later
  // call throws too, so the file stays an unbroken prefix of what was meant to be written.
  void write_line(std::string_view line);
  const std::filesystem::path& path() const { return path_; }
  size_t lines_written() const { return lines_; }
  bool failed() const { return failed_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  off_t good_size_ = 0;  // bytes of complete lines
  size_t lines_ = 0;
  bool failed_ = false;
  int failed_errno_ = 0;
};

// Writes `content` to `path` through a temporary file in the same folder and a rename, so
// readers see either the old file or the complete new one. Throws OutputError on failure.
// Space reserved with reserve_space_for(path) is written into first, then released.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

// Best effort: allocates `bytes` on disk for the temporary file write_file_atomically(path)
// will use (its size stays 0), so that a disk that fills up during the job still has room for
// the summaries at its end. False when the file system cannot (full already, no fallocate).
bool reserve_space_for(const std::filesystem::path& path, uint64_t bytes);

}  // namespace commbench
