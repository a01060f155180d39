// Shared pieces of the tests that run the real commbench on the simulated GPU (tests/simgpu):
// the binaries are the ones users run; only LD_LIBRARY_PATH (set by CMake on these tests) puts
// the simulated libcudart/libnccl/libnvidia-ml first.
#pragma once

#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace commbench::testing {

inline bool plugin_built(const char* name) {
  return std::filesystem::exists(std::filesystem::path(COMMBENCH_PLUGIN_DIR) /
                                 fmt::format("libcommbench_backend_{}.so", name));
}

inline bool sim_library(const char* file) {
  return std::filesystem::exists(std::filesystem::path(SIMGPU_LIB_DIR) / file);
}

// Skips the calling test unless the simulated CUDA runtime is what the workers will load.
#define REQUIRE_SIMULATED_CUDA()                                                             \
  do {                                                                                       \
    if (!commbench::testing::sim_library("libcudart.so.13"))                                 \
      GTEST_SKIP() << "simulated libcudart.so.13 not built (no CUDA headers at configure)";  \
    const char* ld = std::getenv("LD_LIBRARY_PATH");                                         \
    if (!ld || std::string(ld).find(SIMGPU_LIB_DIR) != 0)                                    \
      GTEST_SKIP() << "LD_LIBRARY_PATH does not start with " SIMGPU_LIB_DIR                  \
                      " (run through ctest)";                                                \
  } while (0)

}  // namespace commbench::testing
