// Which case a failed execution broke in (agent/broken_case.h): the one that gets a `failed`
// record instead of vanishing among the cases not run.
#include <gtest/gtest.h>

#include "agent/broken_case.h"

namespace commbench {
namespace {

TEST(BrokenCase, TheFailedRanksCaseWhenItIsHostedHere) {
  // Rank 2 failed in case 3 while rank 0 had already moved on to case 4 (a point-to-point
  // pattern rank 0 takes no part in), and case 3's record has not arrived.
  EXPECT_EQ(broken_case_index({{0, 4}, {1, 4}, {2, 3}}, 2, {0, 1, 2}), 3);
}

TEST(BrokenCase, RankZerosCaseWhenTheFailedRankIsAnotherAgents) {
  EXPECT_EQ(broken_case_index({{0, 5}}, 3, {0, 1, 2, 3, 4}), 5);
  EXPECT_EQ(broken_case_index({{0, 5}}, -2, {}), 5) << "an abort from another agent";
}

TEST(BrokenCase, NoneWhenItsRecordArrivedOrNoCaseWasRunning) {
  // Rank 1 failed after case 2's record arrived, before its next phase message: not case 2 again.
  EXPECT_EQ(broken_case_index({{0, 3}, {1, 2}}, 1, {0, 1, 2}), -1);
  // The failed rank was in finalisation: no measured case is blamed, not even rank 0's last.
  EXPECT_EQ(broken_case_index({{0, 7}, {1, -1}}, 1, {0, 1, 2, 3, 4, 5, 6}), -1);
  // Only the agent of rank 0 writes case records.
  EXPECT_EQ(broken_case_index({{1, 2}, {2, 2}}, 1, {}), -1);
  EXPECT_EQ(broken_case_index({{0, -1}, {1, -1}}, 1, {}), -1);
}

}  // namespace
}  // namespace commbench
