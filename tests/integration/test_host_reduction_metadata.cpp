// Which host reduction kernel a plugin ran is in its execution metadata ("host_reduction"):
// results of machines whose kernels differ are not comparable where the reduction weighs. UCX's
// own collectives take the widest this CPU runs (AVX2 on x86-64 where present); the Gloo plugin
// stays with the baseline ISA, as gloo::sum<T> in its users' builds (host_reduce.hpp).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "job_harness.h"

namespace commbench::testing {
namespace {

// What the SDK should report for `widest` on the CPU this test runs on.
std::string expected_kernel(bool widest) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return widest && __builtin_cpu_supports("avx2") ? "avx2" : "sse2";
#else
  (void)widest;
  return "";  // not asserted off x86-64
#endif
}

TEST(HostReductionMetadata, UcxNamesTheWidestKernelAndGlooTheBaseline) {
  REQUIRE_PLUGINS("ucx", "gloo");
  JobDir dir;
  const auto file = dir.write("kernel.toml", R"(
name = "kernel"
[[run]]
name = "both"
backends = ["ucx", "gloo"]
world_size = 2
ops = ["allreduce"]
dtypes = ["f32"]
redops = ["sum"]
sizes = ["1000 elements"]
warmup = 1
iterations = 2
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::map<std::string, std::string> kernel;
  for (const auto& e : dir.records("execution"))
    for (const auto& [rank, meta] : e["metadata"]["ranks"].items()) {
      const std::string k = meta["backend"].value("host_reduction", "(none)");
      const std::string backend = e["backend"];
      // Every rank of a backend ran the same kernel.
      if (kernel.count(backend)) EXPECT_EQ(kernel[backend], k) << backend << " rank " << rank;
      kernel[backend] = k;
    }
  ASSERT_EQ(kernel.size(), 2u) << r.output;
  if (expected_kernel(true).empty()) GTEST_SKIP() << "kernel names are asserted on x86-64 only";
  EXPECT_EQ(kernel["ucx"], expected_kernel(true));
  EXPECT_EQ(kernel["gloo"], expected_kernel(false));
}

}  // namespace
}  // namespace commbench::testing
