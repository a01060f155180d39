// Reading an experiment file's bytes: only regular files and pipes, at most a fixed size, every
// failure (missing, a symlink loop, a directory, a device, permission) a message rather than an
// exception, so `validate` and `run` never crash or read forever on a wrong path.
#pragma once

#include <cstddef>
#include <string>
#include <variant>

namespace commbench {

// Real experiment files are a few KiB; 16 MiB leaves room for generated sweeps and stops
// `validate /dev/stdin < /dev/zero` from filling memory.
inline constexpr size_t kMaxExperimentFileBytes = 16u << 20;

struct FileReadError {
  std::string message;  // "cannot read the experiment file: ...", with what to do
};

// The whole file, or why it cannot be read. `max_bytes` is for tests.
std::variant<std::string, FileReadError> read_experiment_file(
    const std::string& path, size_t max_bytes = kMaxExperimentFileBytes);

}  // namespace commbench
