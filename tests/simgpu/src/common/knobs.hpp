// Environment knobs and the debug log, shared by the three simulated libraries (header-only so each
// library carries its own copy and none depends on another for it).
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace simgpu {

inline const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

inline long long env_int(const char* name, long long def) {
  const char* v = env(name);
  if (v == nullptr) return def;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  return (end == v) ? def : x;
}

// "4GiB", "512M", "1048576", "2K" (K/M/G/T = powers of 1024, with or without "iB"/"B").
inline unsigned long long parse_bytes(const char* s, unsigned long long def) {
  if (s == nullptr) return def;
  char* end = nullptr;
  double x = std::strtod(s, &end);
  if (end == s || x < 0) return def;
  unsigned long long mul = 1;
  switch (*end) {
    case 'k': case 'K': mul = 1ULL << 10; break;
    case 'm': case 'M': mul = 1ULL << 20; break;
    case 'g': case 'G': mul = 1ULL << 30; break;
    case 't': case 'T': mul = 1ULL << 40; break;
    default: break;
  }
  return static_cast<unsigned long long>(x * static_cast<double>(mul));
}

inline bool log_enabled() {
  static const bool on = env("SIMGPU_LOG") != nullptr && std::strcmp(env("SIMGPU_LOG"), "0") != 0;
  return on;
}

// The rank SIMGPU_FAULT_RANK is compared with: the NCCL rank once a communicator exists (the NCCL
// library reports it through simgpu_set_fault_rank), else the launcher's rank variables.
inline int launcher_rank() {
  for (const char* n : {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (env(n) != nullptr) return static_cast<int>(env_int(n, -1));
  }
  return -1;
}

}  // namespace simgpu

#define SIMGPU_LOG(...)                                                    \
  do {                                                                     \
    if (simgpu::log_enabled()) {                                           \
      std::fprintf(stderr, "[simgpu pid %d] ", static_cast<int>(getpid())); \
      std::fprintf(stderr, __VA_ARGS__);                                   \
      std::fputc('\n', stderr);                                            \
    }                                                                      \
  } while (0)
