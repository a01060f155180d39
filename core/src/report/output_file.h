// Writing result files safely: line files flushed as they grow (a crash keeps every line already
// written) and whole files replaced atomically (a crash never leaves half a summary).
#pragma once

#include <cstdio>
#include <filesystem>
#include <string_view>

namespace commbench {

// A file written line by line; every line reaches the kernel before write_line returns.
class LineFile {
 public:
  // Creates or truncates `path`. Throws std::runtime_error naming the path on failure.
  explicit LineFile(std::filesystem::path path);
  ~LineFile();
  LineFile(const LineFile&) = delete;
  LineFile& operator=(const LineFile&) = delete;

  // Writes `line` plus '\n' and flushes. Throws on a write error (disk full, I/O error).
  void write_line(std::string_view line);
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
};

// Writes `content` to `path` through a temporary file in the same folder and a rename, so
// readers see either the old file or the complete new one. Throws on failure.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

}  // namespace commbench
