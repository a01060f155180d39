// Linked against the real CUDA runtime and NCCL of the toolkit (RUNPATH to them), run with SIMGPU_LIB_DIR
// first on LD_LIBRARY_PATH: proves that a product binary picks the simulated libraries up without being
// relinked (symbol versions and sonames match). Exits 0 only if both calls reached the simulation.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdio>
#include <cstring>

int main() {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess || std::strstr(prop.name, "simulated") == nullptr) {
    std::fprintf(stderr, "libcudart.so.13 is not the simulated one (device 0: \"%s\")\n", prop.name);
    return 1;
  }
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess || std::memcmp(id.internal, "SIMGPU1", 8) != 0) {
    std::fprintf(stderr, "libnccl.so.2 is not the simulated one\n");
    return 1;
  }
  std::printf("real-linked binary runs on: %s\n", prop.name);
  return 0;
}
