#include "observe/warm_load.h"

#include <signal.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <iostream>
#include <thread>
#include <vector>

#include "device/cuda_runtime.h"

namespace commbench {
namespace {

std::atomic<bool> g_stop{false};
void on_term(int) { g_stop.store(true); }

void spin_cpu() {
  volatile double x = 1.0001;
  while (!g_stop.load(std::memory_order_relaxed))
    for (int i = 0; i < 100000; ++i) x = std::sqrt(x * x + 1e-9);
}

// Copies keep the memory system and copy engines busy: enough to heat a GPU towards its working
// temperature without kernels (the core has none).
void copy_on_gpu(const cuda::Runtime* rt, int device) {
  constexpr size_t kBytes = 256u << 20;
  if (rt->SetDevice(device) != 0) return;
  void* a = nullptr;
  void* b = nullptr;
  if (rt->Malloc(&a, kBytes) != 0 || rt->Malloc(&b, kBytes) != 0) return;
  constexpr int kDeviceToDevice = 3;  // cudaMemcpyDeviceToDevice
  while (!g_stop.load(std::memory_order_relaxed))
    if (rt->Memcpy(b, a, kBytes, kDeviceToDevice) != 0) break;
}

}  // namespace

int warm_load_main(int argc, char** argv) {
  struct sigaction sa {};
  sa.sa_handler = on_term;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  const bool gpus = argc > 1 && std::strcmp(argv[1], "--gpus") == 0;
  std::vector<std::thread> threads;
  if (gpus) {
    std::string why;
    if (const cuda::Runtime* rt = cuda::Runtime::get(&why)) {
      int n = 0;
      if (rt->GetDeviceCount(&n) == 0)
        for (int d = 0; d < n; ++d) threads.emplace_back(copy_on_gpu, rt, d);
    } else {
      std::cerr << "commbench warm-up: no GPU load: " << why << "\n";
    }
  }
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < cpus; ++i) threads.emplace_back(spin_cpu);
  for (auto& t : threads) t.join();
  return 0;
}

}  // namespace commbench
