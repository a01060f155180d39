// The nccl and ncclx plugins on a machine without a GPU: they build, `commbench plugins` lists
// them, and a run that asks for them is reported unavailable ("no CUDA device") while the job's
// other runs complete and the exit code stays 0.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "job_harness.h"

namespace commbench::testing {
namespace {

bool built(const char* name) {
  return std::filesystem::exists(std::filesystem::path(COMMBENCH_PLUGIN_DIR) /
                                 fmt::format("libcommbench_backend_{}.so", name));
}

bool gpu_present() { return std::system("nvidia-smi -L > /dev/null 2>&1") == 0; }

TEST(NcclWithoutGpu, ListedAndReportedUnavailableWhileOtherRunsComplete) {
  if (!built("nccl") || !built("ncclx")) GTEST_SKIP() << "nccl/ncclx not built (no CUDA toolkit or NCCL at configure time)";
  if (gpu_present()) GTEST_SKIP() << "a GPU is present: this test covers machines without one";
  const CommandResult list = run_commbench({"plugins"}, std::filesystem::temp_directory_path());
  ASSERT_EQ(list.exit_code, 0) << list.output;
  EXPECT_NE(list.output.find("nccl 0."), std::string::npos) << list.output;
  EXPECT_NE(list.output.find("ncclx 0."), std::string::npos) << list.output;
  EXPECT_NE(list.output.find("stream_ordered"), std::string::npos) << list.output;

  JobDir dir;
  const auto file = dir.write("gpu.toml", R"(
name = "gpu-on-cpu"
[[run]]
name = "gpu"
backends = ["nccl", "ncclx"]
memory = "cuda"
world_size = 2
ops = ["allreduce", "alltoall"]
sizes = ["1MiB"]
[[run]]
name = "cpu"
backend = "gloo"
world_size = 2
ops = ["allreduce"]
sizes = ["1MiB"]
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 3u);
  for (int i : {0, 1}) {
    EXPECT_EQ(execs[i]["status"], "unavailable") << execs[i].dump();
    EXPECT_NE(execs[i]["reason"].get<std::string>().find("no CUDA device"), std::string::npos) << execs[i].dump();
  }
  EXPECT_EQ(execs[2]["status"], "ok");
  EXPECT_EQ(dir.records().size(), 1u);
}

TEST(NcclWithoutGpu, NcclxWithABadLibraryNamesIt) {
  if (!built("ncclx")) GTEST_SKIP() << "ncclx not built";
  JobDir dir;
  const auto file = dir.write("x.toml", R"(
name = "ncclx-lib"
[[run]]
backend = "ncclx"
memory = "cuda"
world_size = 1
ops = ["allreduce"]
sizes = ["1MiB"]
[run.options.ncclx]
library = "libm.so.6"
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  EXPECT_NE(r.exit_code, 0);
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u);
  EXPECT_EQ(execs[0]["status"], "failed");
  EXPECT_NE(execs[0]["reason"].get<std::string>().find("libm.so.6 lacks ncclGetVersion"), std::string::npos)
      << execs[0].dump();
}

}  // namespace
}  // namespace commbench::testing
