#include "report/output_file.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace commbench {
namespace {

[[noreturn]] void throw_write_error(const std::filesystem::path& path, int err) {
  throw std::runtime_error(
      fmt::format("cannot write '{}': {}; check free space and permissions of the output directory "
                  "(output_dir in the experiment file)",
                  path.string(), std::strerror(err)));
}

void write_all(std::FILE* f, const std::filesystem::path& path, std::string_view data) {
  if (!data.empty() && std::fwrite(data.data(), 1, data.size(), f) != data.size())
    throw_write_error(path, errno);
}

}  // namespace

LineFile::LineFile(std::filesystem::path path) : path_(std::move(path)) {
  file_ = std::fopen(path_.c_str(), "w");
  if (!file_) throw_write_error(path_, errno);
}

LineFile::~LineFile() {
  if (file_) std::fclose(file_);
}

void LineFile::write_line(std::string_view line) {
  write_all(file_, path_, line);
  write_all(file_, path_, "\n");
  // fflush hands the bytes to the kernel: they survive a crash of this process (not of the
  // machine, which would need fsync and is not worth its cost per case).
  if (std::fflush(file_) != 0) throw_write_error(path_, errno);
}

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) throw_write_error(tmp, errno);
  try {
    write_all(f, tmp, content);
  } catch (...) {
    std::fclose(f);
    std::remove(tmp.c_str());
    throw;
  }
  if (std::fclose(f) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw_write_error(tmp, err);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw std::runtime_error(
        fmt::format("cannot rename '{}' to '{}': {}", tmp.string(), path.string(), ec.message()));
  }
}

}  // namespace commbench
