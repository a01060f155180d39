#include "report/output_dir.h"

#include "report/output_file.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>

namespace commbench {
namespace {

constexpr size_t kMaxNameLength = 100;  // leaves room for the timestamp within NAME_MAX (255)
constexpr int kMaxAttempts = 10000;

std::string local_timestamp(std::chrono::system_clock::time_point time) {
  const std::time_t t = std::chrono::system_clock::to_time_t(time);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

bool is_safe_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

}  // namespace

std::string sanitize_file_name(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (out.size() >= kMaxNameLength) break;
    out += is_safe_char(c) ? c : '_';
  }
  // A leading '.' hides the folder; a leading '-' reads as an option to shell tools.
  while (!out.empty() && (out.front() == '.' || out.front() == '-')) out.erase(0, 1);
  return out.empty() ? "experiment" : out;
}

std::filesystem::path make_job_output_dir(const std::filesystem::path& base_dir,
                                          std::string_view experiment_name,
                                          std::chrono::system_clock::time_point time) {
  std::error_code ec;
  // A symbolic link to nothing: mkdir says only "File exists".
  if (std::filesystem::is_symlink(std::filesystem::symlink_status(base_dir, ec)) &&
      !std::filesystem::exists(base_dir, ec))
    throw OutputError(base_dir, ENOENT,
                      fmt::format("cannot use the output directory '{}': it is a symbolic link to '{}', which does "
                                  "not exist; create that folder, or choose another output_dir (or -o)",
                                  base_dir.string(), std::filesystem::read_symlink(base_dir, ec).string()));
  std::filesystem::create_directories(base_dir, ec);
  if (ec) throw_output_error(base_dir, ec.value(), "create the output directory");
  if (!std::filesystem::is_directory(base_dir, ec))
    throw_output_error(base_dir, ENOTDIR, "use the output directory");

  const std::string stem = sanitize_file_name(experiment_name) + "-" + local_timestamp(time);
  for (int attempt = 1; attempt <= kMaxAttempts; ++attempt) {
    const std::filesystem::path dir =
        base_dir / (attempt == 1 ? stem : fmt::format("{}-{}", stem, attempt));
    // mkdir is atomic: exactly one of several racing jobs gets each name.
    if (::mkdir(dir.c_str(), 0777) == 0) return dir;
    const int err = errno;
    if (err != EEXIST) throw_output_error(dir, err, "create the job folder");
  }
  throw OutputError(base_dir, EEXIST, fmt::format(
      "'{}' already holds {} folders named '{}*'; clean up old results or choose another "
      "output_dir",
      base_dir.string(), kMaxAttempts, stem));
}

}  // namespace commbench
