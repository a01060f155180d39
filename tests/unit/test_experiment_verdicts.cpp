// Experiment-file behaviour behind issue 27: `repeats` (run-to-run noise for compare), `method`
// as the method's key with `timing` still read, a decimal unit on a binary-looking size said,
// an `expect` that could never be checked refused (an op, a size range, a message rate the ops
// lack), sizes equal across units refused, nccl-tests binary names in quick.
#include <gtest/gtest.h>

#include "cli/quick.h"
#include "experiment/experiment.h"
#include "plan/plan.h"

namespace commbench {
namespace {

ParseResult parse_verdict_run(const std::string& body) {
  return parse_experiment_string("name = \"t\"\n[[run]]\nname = \"r\"\nbackends = [\"gloo\", \"ucx\"]\n" + body, "t.toml");
}

std::vector<std::string> verdict_diagnostics(const ParseResult& r, Diagnostic::Severity s) {
  std::vector<std::string> out;
  for (const auto& d : r.diagnostics)
    if (d.severity == s) out.push_back(d.format());
  return out;
}

TEST(ExperimentVerdicts, RepeatsAreRoundsOfFreshExecutions) {
  const ParseResult r = parse_verdict_run("ops = [\"allreduce\"]\nsizes = [\"4KiB\"]\nworld_sizes = [2, 4]\nrepeats = 3\n");
  ASSERT_TRUE(r.experiment) << (r.diagnostics.empty() ? "" : r.diagnostics[0].format());
  const auto plan = plan_job(*r.experiment);
  ASSERT_EQ(plan.size(), 12u);  // 2 backends x 2 world sizes x 3 repeats
  // Rounds: every configuration once, then again — a drift of the machine spreads over all.
  for (size_t i = 0; i < plan.size(); ++i) {
    EXPECT_EQ(plan[i].repeat, static_cast<int>(i / 4)) << i;
    EXPECT_EQ(plan[i].index, static_cast<int>(i));
  }
  EXPECT_EQ(plan[0].backend, plan[4].backend);
  EXPECT_EQ(plan[1].world_size, plan[5].world_size);
  // The worker gets the repeat with the execution.
  Execution back;
  from_json(nlohmann::json(plan[7]), back);
  EXPECT_EQ(back.repeat, 1);
  EXPECT_FALSE(verdict_diagnostics(parse_verdict_run("ops = [\"allreduce\"]\nsizes = [\"4KiB\"]\nrepeats = 0\n"), Diagnostic::Severity::Error).empty());
}

TEST(ExperimentVerdicts, MethodIsTheKeyAndTimingIsItsFormerName) {
  const ParseResult now = parse_verdict_run("ops = [\"allreduce\"]\nsizes = [\"4KiB\"]\nmethod = \"per_iteration\"\n");
  ASSERT_TRUE(now.experiment);
  EXPECT_EQ(now.experiment->runs[0].method, MeasureMethod::PerIteration);
  EXPECT_TRUE(now.diagnostics.empty());
  const ParseResult old = parse_verdict_run("ops = [\"allreduce\"]\nsizes = [\"4KiB\"]\ntiming = \"per_iteration\"\n");
  ASSERT_TRUE(old.experiment);
  EXPECT_EQ(old.experiment->runs[0].method, MeasureMethod::PerIteration);
  const auto w = verdict_diagnostics(old, Diagnostic::Severity::Warning);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0], "t.toml:7:10: warning: 'timing' is the former name of 'method' (the timing method); write method = "
                  "... — in results, `timing` names the clock");
  const ParseResult both = parse_verdict_run("ops = [\"allreduce\"]\nsizes = [\"4KiB\"]\ntiming = \"batch\"\nmethod = \"batch\"\n");
  EXPECT_FALSE(both.experiment);
}

TEST(ExperimentVerdicts, ADecimalUnitOnABinaryLookingSizeIsSaid) {
  const ParseResult r = parse_verdict_run("ops = [\"allreduce\"]\nsizes = [\"4KB\", \"1000KB\", \"64KiB\", \"256MB\"]\n");
  ASSERT_TRUE(r.experiment);
  EXPECT_EQ(r.experiment->runs[0].sizes[0].value, 4000u) << "4KB stays 4000 bytes";
  const auto w = verdict_diagnostics(r, Diagnostic::Severity::Warning);
  ASSERT_EQ(w.size(), 2u) << "1000KB looks decimal and 64KiB is binary: no warning for them";
  EXPECT_EQ(w[0], "t.toml:6:10: warning: \"4KB\" is 4000 bytes (KB is a decimal unit); if you meant 4096 bytes, "
                  "write \"4KiB\"");
  EXPECT_NE(w[1].find("\"256MB\" is 256000000 bytes"), std::string::npos) << w[1];
  EXPECT_NE(w[1].find("write \"256MiB\""), std::string::npos) << w[1];
}

TEST(ExperimentVerdicts, AnExpectationThatCouldNeverBeCheckedIsRefused) {
  const ParseResult op = parse_verdict_run("ops = [\"allreduce\"]\nsizes = [\"4KiB\"]\n"
                               "expect = { op = \"alltoall\", busbw_gbps = \">= 10\" }\n");
  EXPECT_FALSE(op.experiment);
  const auto e = verdict_diagnostics(op, Diagnostic::Severity::Error);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("'alltoall', which run 'r' never measures (its ops: allreduce)"), std::string::npos) << e[0];
  const ParseResult size = parse_verdict_run("ops = [\"allreduce\"]\nsizes = [\"4KiB\", \"64KiB\"]\n"
                                 "expect = { min_size = \"1MiB\", busbw_gbps = \">= 10\" }\n");
  EXPECT_FALSE(size.experiment);
  const ParseResult fine = parse_verdict_run("ops = [\"allreduce\", \"alltoall\"]\nsizes = [\"4KiB\", \"1MiB\"]\n"
                                 "expect = { op = \"alltoall\", min_size = \"1MiB\", busbw_gbps = \">= 10\" }\n");
  EXPECT_TRUE(fine.experiment) << (fine.diagnostics.empty() ? "" : fine.diagnostics[0].format());
}

// msg_rate_mps is 0 for ops that deliver no counted messages: "<= 1" once "met" on allreduce.
TEST(ExperimentVerdicts, AMessageRateExpectationOnOpsWithoutOneIsRefused) {
  const ParseResult none = parse_verdict_run("ops = [\"allreduce\", \"allgather\"]\nsizes = [\"4KiB\"]\n"
                                             "expect = { msg_rate_mps = \"<= 1\" }\n");
  EXPECT_FALSE(none.experiment);
  const auto e = verdict_diagnostics(none, Diagnostic::Severity::Error);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("checks msg_rate_mps, which none of its ops (allreduce, allgather) has"), std::string::npos) << e[0];
  const ParseResult some = parse_verdict_run("ops = [\"allreduce\", \"msg_rate\"]\nsizes = [\"4KiB\"]\n"
                                             "expect = { op = \"msg_rate\", msg_rate_mps = \">= 1\" }\n");
  EXPECT_TRUE(some.experiment) << (some.diagnostics.empty() ? "" : some.diagnostics[0].format());
}

// "1K elements" and 4096 are one case for f32: measured twice, the copies read as repeats.
TEST(ExperimentVerdicts, ASizeInElementsEqualToOneInBytesIsRefused) {
  const ParseResult r = parse_verdict_run("ops = [\"allreduce\"]\nsizes = [\"1K elements\", 4096]\n");
  EXPECT_FALSE(r.experiment);
  const auto e = verdict_diagnostics(r, Diagnostic::Severity::Error);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("size 4096 is 4096 B of f32, as is size 1K elements (sizes[0])"), std::string::npos) << e[0];
  // With f32 and f64 the f32 cases differ (4096 and 8192 B) but the f64 ones are both 8192 B: refused.
  EXPECT_FALSE(parse_verdict_run("ops = [\"allreduce\"]\nsizes = [\"1K elements\", 8192]\ndtypes = [\"f32\", \"f64\"]\n")
                   .experiment);
  EXPECT_TRUE(parse_verdict_run("ops = [\"allreduce\"]\nsizes = [\"1K elements\", 8192]\n").experiment);
}

// Strong scaling divides each size among the ranks even at one world size: no "no effect" there.
TEST(ExperimentVerdicts, StrongScalingAtOneWorldSizeIsNotSaidToHaveNoEffect) {
  const ParseResult strong = parse_verdict_run("ops = [\"allgather\"]\nsizes = [\"8KiB\"]\nworld_size = 2\nscaling = \"strong\"\n");
  ASSERT_TRUE(strong.experiment);
  for (const auto& w : verdict_diagnostics(strong, Diagnostic::Severity::Warning))
    EXPECT_EQ(w.find("'scaling' has no effect"), std::string::npos) << w;
  const ParseResult weak = parse_verdict_run("ops = [\"allgather\"]\nsizes = [\"8KiB\"]\nworld_size = 2\nscaling = \"weak\"\n");
  ASSERT_TRUE(weak.experiment);
  const auto w = verdict_diagnostics(weak, Diagnostic::Severity::Warning);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("'scaling' has no effect: the run has one world size"), std::string::npos) << w[0];
}

// alltoall has no in-place case: with in_place alone it once measured nothing and "passed".
TEST(ExperimentVerdicts, InPlaceOnlyIsRefusedForAnOpWithoutAnInPlaceCase) {
  const ParseResult only = parse_verdict_run("ops = [\"alltoall\", \"allreduce\"]\nsizes = [\"4KiB\"]\nplacement = \"in_place\"\n");
  EXPECT_FALSE(only.experiment);
  const auto e = verdict_diagnostics(only, Diagnostic::Severity::Error);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("placement = \"in_place\" leaves alltoall with no case"), std::string::npos) << e[0];
  const ParseResult both =
      parse_verdict_run("ops = [\"alltoall\", \"allreduce\"]\nsizes = [\"4KiB\"]\nplacement = [\"in_place\", \"out_of_place\"]\n");
  ASSERT_TRUE(both.experiment);
  const auto w = verdict_diagnostics(both, Diagnostic::Severity::Warning);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("alltoall is measured out of place only"), std::string::npos) << w[0];
  EXPECT_EQ(plan_job(*both.experiment)[0].cases.size(), 3u) << "allreduce twice, alltoall once";
}

TEST(ExperimentVerdicts, QuickTakesNcclTestsBinaryNames) {
  EXPECT_EQ(quick_op_name("all_reduce_perf"), "allreduce");
  EXPECT_EQ(quick_op_name("all_gather_perf"), "allgather");
  EXPECT_EQ(quick_op_name("reduce_scatter_perf"), "reducescatter");
  EXPECT_EQ(quick_op_name("alltoall_perf"), "alltoall");
  EXPECT_EQ(quick_op_name("sendrecv_perf"), "sendrecv");
  EXPECT_EQ(quick_op_name("broadcast_perf"), "broadcast");
  EXPECT_EQ(quick_op_name("hypercube_perf"), "hypercube_perf") << "no such op: left for the parser to refuse";
  EXPECT_EQ(quick_op_name("allreduce"), "allreduce");
}

// nccl-tests' common.cu: size = stepfactor > 1 ? size * stepfactor : size + stepbytes. A probe:
// -f 2 -i 1K gave 8 arithmetic sizes (the factor dropped without a word), and -f 1 was refused.
TEST(ExperimentVerdicts, QuickStepsAsNcclTestsDoes) {
  const auto sizes_line = [](const QuickExperiment& q) {
    const auto at = q.toml.find("\nsizes = ");
    return at == std::string::npos ? std::string() : q.toml.substr(at + 1, q.toml.find('\n', at + 1) - at - 1);
  };
  QuickFlags f;
  f.ops = {"allreduce"};
  f.min_bytes = "1K", f.max_bytes = "8K", f.factor = "2", f.step = "1K";
  QuickExperiment q = quick_experiment(f);
  EXPECT_TRUE(q.errors.empty());
  EXPECT_EQ(sizes_line(q), "sizes = { min = \"1KiB\", max = \"8KiB\", factor = 2 }");
  ASSERT_EQ(q.notes.size(), 1u);
  EXPECT_NE(q.notes[0].find("-i 1K: not used: -f 2 multiplies"), std::string::npos) << q.notes[0];
  f.factor = "1";  // nccl-tests' default: add -i
  q = quick_experiment(f);
  EXPECT_TRUE(q.errors.empty());
  EXPECT_TRUE(q.notes.empty());
  EXPECT_EQ(sizes_line(q), "sizes = [\"1024B\", \"2048B\", \"3072B\", \"4096B\", \"5120B\", \"6144B\", \"7168B\", \"8192B\"]");
  f.step.clear();  // -f 1 and nothing to add
  q = quick_experiment(f);
  ASSERT_EQ(q.errors.size(), 1u);
  EXPECT_NE(q.errors[0].find("-f 1: error: adds -i"), std::string::npos) << q.errors[0];
  f.factor.clear(), f.step = "1K", f.min_bytes = "8K", f.max_bytes = "1K";
  q = quick_experiment(f);
  ASSERT_EQ(q.errors.size(), 1u);
  EXPECT_NE(q.errors[0].find("-b is larger than -e"), std::string::npos) << q.errors[0];
  f.factor = "02", f.step.clear(), f.min_bytes = "1K", f.max_bytes = "8K";  // written as the number: "02" is not TOML
  EXPECT_EQ(sizes_line(quick_experiment(f)), "sizes = { min = \"1KiB\", max = \"8KiB\", factor = 2 }");
  f.factor.clear();  // the default
  EXPECT_EQ(sizes_line(quick_experiment(f)), "sizes = { min = \"1KiB\", max = \"8KiB\", factor = 2 }");
  for (const char* bad : {"abc", "0"}) {  // refused also where -i would make it unused
    f.factor = bad, f.step = "1K";
    q = quick_experiment(f);
    ASSERT_EQ(q.errors.size(), 1u) << bad;
    EXPECT_NE(q.errors[0].find("expected a whole factor of 2 or more"), std::string::npos) << q.errors[0];
  }
  f.factor.clear(), f.step.clear();
  f.min_bytes = "1K", f.max_bytes = "8K", f.backends = {""};
  q = quick_experiment(f);
  ASSERT_EQ(q.errors.size(), 1u);
  EXPECT_NE(q.errors[0].find("--backend: error: expected a backend name"), std::string::npos) << q.errors[0];
}

}  // namespace
}  // namespace commbench
