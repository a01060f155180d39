// Issue 28 §13: Gloo at more local ranks than the host's ports allow. Gloo listens once per peer
// for every rank while it connects its full mesh; 200 local ranks once failed after 94 s with
// "Address already in use... the peer probably exited". In a network namespace whose ephemeral
// port range is 100 ports, 12 ranks (132 listening sockets) are refused at once, naming the range,
// while 8 ranks (56) still run. Skipped where namespaces cannot be made (not root).
#include <gtest/gtest.h>

#include <unistd.h>

#include <fmt/format.h>

#include "job_harness.h"

namespace commbench::testing {
namespace {

TEST(GlooHostLimits, AMeshThePortRangeCannotHoldIsRefusedUpFrontNamingTheRange) {
  REQUIRE_PLUGINS("gloo");
  if (::geteuid() != 0 || run_shell("command -v unshare && command -v ip").exit_code != 0)
    GTEST_SKIP() << "needs root, unshare and ip to make a network namespace";
  JobDir dir;
  const auto file = dir.write("ports.toml", R"(name = "ports"
[[run]]
name = "fits"
backend = "gloo"
world_size = 8
ops = ["allreduce"]
sizes = ["4KiB"]
iterations = 2
[[run]]
name = "too-many"
backend = "gloo"
world_size = 12
ops = ["allreduce"]
sizes = ["4KiB"]
iterations = 2
timeout = "120s"
)");
  const auto r = run_shell(fmt::format(
      "cd {} && unshare -n sh -c 'ip link set lo up && sysctl -q -w net.ipv4.ip_local_port_range=\"40000 40099\" && "
      "exec {} run {} -o out --quiet'",
      shell_quote(dir.path().string()), COMMBENCH_BIN, file.string()));
  if (r.output.find("unshare failed") != std::string::npos || r.output.find("Operation not permitted") != std::string::npos)
    GTEST_SKIP() << r.output;
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 2u) << r.output;
  EXPECT_EQ(execs[0]["status"], "ok") << execs[0].dump();
  EXPECT_EQ(execs[1]["status"], "failed") << execs[1].dump();
  const std::string reason = execs[1]["reason"];
  EXPECT_NE(reason.find("needs 132 local ports"), std::string::npos) << reason;
  EXPECT_NE(reason.find("ip_local_port_range gives 100 (40000-40099)"), std::string::npos) << reason;
  EXPECT_EQ(execs[1]["failure_kind"], "resource_exhausted") << execs[1].dump();
  EXPECT_LT(execs[1]["elapsed_s"].get<double>(), 30.0) << "refused up front, not after the connect timed out";
}

}  // namespace
}  // namespace commbench::testing
