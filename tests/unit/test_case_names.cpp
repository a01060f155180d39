// How a case is named in records, reports and traces: an op that moves no data (barrier) has no
// dtype to name, whatever the run's dtypes, while its plan entry still carries one for the ABI.
#include <algorithm>

#include <gtest/gtest.h>

#include "experiment/experiment.h"
#include "plan/plan.h"

namespace commbench {
namespace {

std::vector<CaseSpec> cases_of(const std::string& run_body) {
  const ParseResult r = parse_experiment_string("name = \"t\"\n[[run]]\nbackend = \"gloo\"\nworld_size = 2\n" + run_body, "t.toml");
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.format();
  const auto plan = plan_job(*r.experiment);
  EXPECT_EQ(plan.size(), 1u);
  return plan.empty() ? std::vector<CaseSpec>{} : plan[0].cases;
}

TEST(CaseNames, BarrierNamesNoDtypeAndDataOpsNameTheirs) {
  const auto cases = cases_of("ops = [\"barrier\", \"allreduce\", \"allgather\"]\nsizes = [\"1KiB\"]\ndtypes = [\"f64\"]\n");
  ASSERT_EQ(cases.size(), 3u);
  int barriers = 0;
  for (const CaseSpec& c : cases) {
    if (c.op == OpKind::Barrier) {
      ++barriers;
      EXPECT_EQ(case_dtype_name(c), "");
      EXPECT_EQ(describe_case(c), "barrier 0 B");
    } else {
      EXPECT_EQ(case_dtype_name(c), "f64") << op_info(c.op).name;
    }
  }
  EXPECT_EQ(barriers, 1);
  const auto reduce = std::find_if(cases.begin(), cases.end(), [](const CaseSpec& c) { return c.op == OpKind::Allreduce; });
  ASSERT_NE(reduce, cases.end());
  EXPECT_EQ(describe_case(*reduce), "allreduce 1024 B f64 sum out_of_place");
  const auto gather = std::find_if(cases.begin(), cases.end(), [](const CaseSpec& c) { return c.op == OpKind::Allgather; });
  ASSERT_NE(gather, cases.end());
  EXPECT_EQ(describe_case(*gather), "allgather 1024 B f64 out_of_place");
}

}  // namespace
}  // namespace commbench
