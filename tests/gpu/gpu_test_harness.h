// Shared pieces of the GPU tests (tests/gpu): the real commbench, workers and plugins, run
//  - on the simulated GPU (default; ctest label gpu_sim puts tests/simgpu's libraries first on
//    LD_LIBRARY_PATH — the binaries are the ones users run, nothing else differs), or
//  - on real hardware (COMMBENCH_GPU_TESTS=real, label gpu_real, what scripts/gpu-acceptance.sh
//    runs): tests that need more GPUs than the host has, or the simulation's fault knobs and
//    identity, skip with the reason.
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "job_harness.h"  // plugin_built

namespace commbench::testing {

// The simulated libraries (tests/simgpu): $SIMGPU_LIB_DIR (ctest sets it), else <build>/simgpu/lib.
// Found at run time: this binary also travels in the release tarball, which has no simulation
// and must hold no build path.
inline std::string sim_lib_dir() {
  if (const char* d = std::getenv("SIMGPU_LIB_DIR"); d && *d) return d;
  return (install_root() / "simgpu" / "lib").string();
}
inline std::string sim_ncclx_library() {
  if (const char* p = std::getenv("SIMGPU_NCCLX_LIBRARY"); p && *p) return p;
  return (install_root() / "simgpu" / "ncclx" / "libnccl.so.2").string();
}

inline bool sim_library(const char* file) {
  return std::filesystem::exists(std::filesystem::path(sim_lib_dir()) / file);
}

inline bool real_gpu_mode() {
  const char* m = std::getenv("COMMBENCH_GPU_TESTS");
  return m != nullptr && std::string(m) == "real";
}

// CUDA devices the workers will see, through the runtime they will load (-1: none loads).
inline int visible_gpus() {
  static const int count = [] {
    void* h = ::dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);  // never closed: CUDA dislikes it
    if (h == nullptr) return -1;
    auto get = reinterpret_cast<int (*)(int*)>(::dlsym(h, "cudaGetDeviceCount"));
    int n = 0;
    return get != nullptr && get(&n) == 0 ? n : 0;
  }();
  return count;
}

// The NCCLX library the ncclx tests load: the simulated one, or COMMBENCH_NCCLX_LIBRARY on real
// hardware (empty: none).
inline std::string ncclx_library() {
  if (!real_gpu_mode()) return std::filesystem::exists(sim_ncclx_library()) ? sim_ncclx_library() : "";
  const char* lib = std::getenv("COMMBENCH_NCCLX_LIBRARY");
  return lib ? lib : "";
}

// Skips unless the workers will run on at least `n` GPUs: the simulated ones (which must be what
// the workers load), or real ones in real mode.
#define REQUIRE_GPUS(n)                                                                        \
  do {                                                                                         \
    if (commbench::testing::real_gpu_mode()) {                                                 \
      const int have = commbench::testing::visible_gpus();                                     \
      if (have < (n)) GTEST_SKIP() << "needs " << (n) << " GPU(s); this host has "             \
                                   << (have < 0 ? 0 : have) << " (real mode)";                 \
      break;                                                                                   \
    }                                                                                          \
    if (!commbench::testing::sim_library("libcudart.so.13"))                                   \
      GTEST_SKIP() << "simulated libcudart.so.13 not built (no CUDA headers at configure)";    \
    const char* ld = std::getenv("LD_LIBRARY_PATH");                                           \
    if (!ld || std::string(ld).find(commbench::testing::sim_lib_dir()) != 0)                   \
      GTEST_SKIP() << "LD_LIBRARY_PATH does not start with " << commbench::testing::sim_lib_dir() \
                   << " (run through ctest)";                                                  \
  } while (0)

// For tests that use the simulation's knobs (SIMGPU_*: memory size, faults, hangs) or check its
// identity: skipped on real hardware.
#define REQUIRE_SIMULATION()                                                                   \
  do {                                                                                         \
    if (commbench::testing::real_gpu_mode())                                                   \
      GTEST_SKIP() << "uses the simulated GPU's fault knobs or identity (sim only)";          \
    REQUIRE_GPUS(1);                                                                           \
  } while (0)

// Skips unless `plugin` is built and `gpus` GPUs are there (with the simulated NCCL in sim mode).
#define REQUIRE_NCCL(plugin, gpus)                                                          \
  do {                                                                                      \
    REQUIRE_GPUS(gpus);                                                                     \
    if (!commbench::testing::real_gpu_mode() && !commbench::testing::sim_library("libnccl.so.2")) \
      GTEST_SKIP() << "simulated libnccl.so.2 not built";                                   \
    if (!commbench::testing::plugin_built(plugin)) GTEST_SKIP() << plugin << " plugin not built"; \
  } while (0)

}  // namespace commbench::testing
