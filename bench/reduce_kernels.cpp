// The host reduction kernel (sdk::reduce, host_reduce.hpp) against the loop Gloo's users run:
// gloo::sum<float> from gloo/math.h, compiled at -O3 in reduce_kernels_gloo_o3.cpp (a Release
// build of a Gloo user). f32 sum in place, as the collectives reduce, on page-aligned buffers.
// Rounds alternate the kernels' order; prints each kernel's median and min..max over rounds (µs
// per call) and its median ratio to gloo::sum<float>. docs/performance.md, "One reduction kernel
// at every -O".
//
// Usage: reduce_kernels [rounds]   (default 15)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "commbench/sdk/host_reduce.hpp"

void gloo_sum_float_o3(void* c, const void* a, const void* b, size_t n);  // reduce_kernels_gloo_o3.cpp

namespace {

using Kernel = void (*)(void*, const void*, const void*, size_t);

void sdk_baseline(void* c, const void* a, const void* b, size_t n) {
  commbench::sdk::reduce(CB_DTYPE_F32, CB_REDOP_SUM, c, a, b, n, commbench::sdk::ReduceIsa::Baseline);
}
void sdk_widest(void* c, const void* a, const void* b, size_t n) {
  commbench::sdk::reduce(CB_DTYPE_F32, CB_REDOP_SUM, c, a, b, n, commbench::sdk::ReduceIsa::Widest);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 15;
  if (rounds < 1) {
    std::fprintf(stderr, "reduce_kernels: rounds must be a positive integer, got '%s'\n", argv[1]);
    return 2;
  }
  struct Named { const char* name; Kernel f; };
  const Named kernels[] = {{"gloo::sum<float> -O3", gloo_sum_float_o3},
                           {"sdk::reduce baseline", sdk_baseline},
                           {"sdk::reduce widest", sdk_widest}};
  constexpr int kKernels = 3;
  std::printf("%10s  %-22s %10s %21s %7s\n", "bytes", "kernel", "median us", "min..max", "ratio");
  for (size_t bytes : {size_t{4} << 10, size_t{64} << 10, size_t{1} << 20, size_t{8} << 20, size_t{64} << 20}) {
    const size_t n = bytes / sizeof(float);
    auto* acc = static_cast<float*>(std::aligned_alloc(4096, bytes));
    auto* in = static_cast<float*>(std::aligned_alloc(4096, bytes));
    // 0 + 1.0 repeatedly stays exact and far from overflow or denormals for every call here.
    for (size_t i = 0; i < n; ++i) acc[i] = 0.0f, in[i] = 1.0f;
    const int calls = static_cast<int>(std::max<size_t>(4, (size_t{256} << 20) / bytes / 4));
    std::vector<double> us[kKernels];
    for (int round = 0; round < rounds; ++round)
      for (int j = 0; j < kKernels; ++j) {
        const int k = (j + round) % kKernels;
        kernels[k].f(acc, acc, in, n);  // warm
        const auto t0 = std::chrono::steady_clock::now();
        for (int c = 0; c < calls; ++c) kernels[k].f(acc, acc, in, n);
        us[k].push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / calls);
      }
    const double reference = median(us[0]);
    for (int k = 0; k < kKernels; ++k)
      std::printf("%10zu  %-22s %10.2f %10.2f..%-10.2f %7.3f\n", bytes, kernels[k].name, median(us[k]),
                  *std::min_element(us[k].begin(), us[k].end()), *std::max_element(us[k].begin(), us[k].end()),
                  median(us[k]) / reference);
    std::free(acc);
    std::free(in);
  }
  std::printf("kernels on this CPU: baseline %s, widest %s; %d rounds, kernels' order rotated each round\n",
              commbench::sdk::reduce_kernel_name(commbench::sdk::ReduceIsa::Baseline),
              commbench::sdk::reduce_kernel_name(commbench::sdk::ReduceIsa::Widest), rounds);
}
