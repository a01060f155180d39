// NVTX ranges (issue 13 §2) seen by a tool: tests/nvtx_probe stands in for nsys's injection
// library, recording every range commbench pushes. Skipped where the core was built without the
// nvtx3 headers (no CUDA toolkit).
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "job_harness.h"

namespace commbench::testing {
namespace {

TEST(Nvtx, RangesNamedLikeTheTraceEventsReachAnAttachedTool) {
  if (std::string(COMMBENCH_NVTX_PROBE).empty()) GTEST_SKIP() << "built without nvtx3 headers (no CUDA toolkit)";
  JobDir dir;
  const auto file = dir.write("n.toml", R"(name = "n"
[[run]]
name = "a"
backends = ["gloo"]
world_sizes = [2]
ops = ["allreduce"]
sizes = ["1KiB"]
warmup = 2
iterations = 3
method = "per_iteration"  # a range per iteration; batch runs them back to back, unannotated
)");
  const auto ranges = dir.path() / "ranges.txt";
  const CommandResult r = run_shell(fmt::format("cd {} && NVTX_INJECTION64_PATH={} NVTX_PROBE_OUT={} {} run {} -o out --quiet",
                                                shell_quote(dir.path().string()), shell_quote(COMMBENCH_NVTX_PROBE),
                                                shell_quote(ranges.string()), COMMBENCH_BIN, shell_quote(file.string())));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::map<std::string, std::multiset<std::string>> pushed;  // pid -> names
  std::map<std::string, int> depth;
  std::ifstream in(ranges);
  for (std::string line; std::getline(in, line);) {
    const auto sp = line.find(' ');
    const std::string pid = line.substr(0, sp), rest = line.substr(sp + 1);
    if (rest.rfind("push ", 0) == 0) {
      pushed[pid].insert(rest.substr(5));
      ++depth[pid];
    } else if (rest == "pop") {
      --depth[pid];
    }
  }
  ASSERT_EQ(pushed.size(), 2u) << "one worker process per rank";
  const std::string c = "allreduce 1024 B f32 sum out_of_place";
  for (const auto& [pid, names] : pushed) {
    for (const std::string& n : {std::string("init"), std::string("rendezvous"), c + " warm-up",
                                 c + " timed", c + " #0", c + " #1", c + " #2"})
      EXPECT_EQ(names.count(n), 1u) << pid << ": " << n;
    // The result is checked on the first iteration and again after the timed ones.
    EXPECT_EQ(names.count(c + " check"), 2u) << pid;
    EXPECT_EQ(depth[pid], 0) << pid << ": every range pushed was popped";
  }
  const auto exec = dir.records("execution").at(0);
  EXPECT_EQ(exec["metadata"]["ranks"]["0"]["nvtx"], "nvtx3, ranges emitted (a tool is attached)");
}

}  // namespace
}  // namespace commbench::testing
