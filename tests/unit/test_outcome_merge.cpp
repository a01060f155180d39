// Agent 0's verdict on an execution spread over several agents (agent/outcome_merge.h): the
// record must name the rank that caused the failure, not one that saw its peer go away.
#include <gtest/gtest.h>

#include "agent/outcome_merge.h"

namespace commbench {
namespace outcome_merge_test {

ExecutionOutcome ok() { return ExecutionOutcome{}; }

ExecutionOutcome failed(int rank, const char* kind, const char* reason, const char* status = "failed") {
  ExecutionOutcome o;
  o.status = status;
  o.failed_rank = rank;
  o.failure_kind = kind;
  o.reason = reason;
  return o;
}

using Others = std::vector<std::optional<ExecutionOutcome>>;

TEST(OutcomeMerge, RankZeroSeeingItsPeerGoAwayBlamesThePeerThatWasKilled) {
  // Rank 1's worker killed: rank 0's gloo read fails "Connection reset by peer" (remote).
  ExecutionOutcome mine = failed(0, "remote", "rank 0 exit code 1: Connection reset by peer");
  merge_outcomes(mine, Others{std::nullopt, failed(1, "crash", "rank 1 killed by signal 9 (SIGKILL)")}, 2);
  EXPECT_EQ(mine.failed_rank, 1);
  EXPECT_EQ(mine.failure_kind, "crash");
  EXPECT_EQ(mine.reason, "rank 1 killed by signal 9 (SIGKILL)");
}

TEST(OutcomeMerge, ATimedOutRankZeroBlamesTheFirstRankThatFailedOnItsOwn) {
  ExecutionOutcome mine = failed(0, "timeout", "rank 0 timed out");
  merge_outcomes(mine, Others{std::nullopt, failed(1, "remote", "peer gone"), failed(2, "internal", "bad plugin")}, 3);
  EXPECT_EQ(mine.failed_rank, 2);
  EXPECT_EQ(mine.failure_kind, "internal");
}

TEST(OutcomeMerge, RankZerosOwnCauseIsKeptOverItsPeersConsequences) {
  ExecutionOutcome mine = failed(0, "crash", "rank 0 killed by signal 11 (SIGSEGV)");
  merge_outcomes(mine, Others{std::nullopt, failed(1, "remote", "peer gone"), failed(2, "crash", "SIGABRT")}, 3);
  EXPECT_EQ(mine.failed_rank, 0);
  EXPECT_EQ(mine.failure_kind, "crash");
}

TEST(OutcomeMerge, WhenEveryRankIsAVictimTheFirstInRankOrderIsNamed) {
  ExecutionOutcome mine = failed(0, "remote", "peer gone");
  merge_outcomes(mine, Others{std::nullopt, failed(1, "timeout", "waited")}, 2);
  EXPECT_EQ(mine.failed_rank, 0);
  EXPECT_EQ(mine.failure_kind, "remote");
  ExecutionOutcome ok0 = ok();
  merge_outcomes(ok0, Others{std::nullopt, failed(1, "remote", "peer gone"), failed(2, "timeout", "waited")}, 3);
  EXPECT_EQ(ok0.failed_rank, 1);
  EXPECT_EQ(ok0.status, "failed");
}

TEST(OutcomeMerge, AnAgentThatNeverReportedIsBlamedFirst) {
  ExecutionOutcome mine = failed(0, "crash", "rank 0 killed by signal 13 (SIGPIPE)");
  merge_outcomes(mine, Others{std::nullopt, failed(1, "internal", "x"), std::nullopt}, 3);
  EXPECT_EQ(mine.failed_rank, 2);
  EXPECT_EQ(mine.failure_kind, "crash");
  EXPECT_NE(mine.reason.find("rank 2's agent never reported"), std::string::npos) << mine.reason;
}

// A signal to agent 0 ended its wait for the reports (mpirun's SIGTERM after a task died): the
// silent agent is not blamed as dead; rank 0's own view stands.
TEST(OutcomeMerge, AWaitCutShortBySignalBlamesNoSilentAgent) {
  ExecutionOutcome ok0;
  ok0.status = "ok";
  merge_outcomes(ok0, Others{std::nullopt, std::nullopt}, 2, true);
  EXPECT_EQ(ok0.status, "interrupted");
  EXPECT_EQ(ok0.failed_rank, -1);
  EXPECT_EQ(ok0.reason, "a signal to rank 0's task ended its wait for rank 1's report");
  ExecutionOutcome mine = failed(1, "remote", "rank 1: connection reset by peer");
  merge_outcomes(mine, Others{std::nullopt, std::nullopt}, 2, true);
  EXPECT_EQ(mine.status, "failed");
  EXPECT_EQ(mine.failed_rank, 1);
  EXPECT_EQ(mine.failure_kind, "remote");
  EXPECT_NE(mine.reason.find("connection reset by peer (a signal to rank 0's task ended its wait"), std::string::npos)
      << mine.reason;
}

TEST(OutcomeMerge, AnInterruptedRankExplainsItsPeersFailuresButNotRankZerosOwnCause) {
  ExecutionOutcome mine = failed(0, "remote", "peer gone");
  merge_outcomes(mine, Others{std::nullopt, failed(-1, "interrupted", "SIGINT", "interrupted")}, 2);
  EXPECT_EQ(mine.status, "interrupted");
  EXPECT_EQ(mine.failed_rank, 1);
  EXPECT_EQ(mine.reason, "rank 1: SIGINT");
  ExecutionOutcome cause = failed(0, "internal", "bad plugin");
  merge_outcomes(cause, Others{std::nullopt, failed(-1, "interrupted", "SIGINT", "interrupted")}, 2);
  EXPECT_EQ(cause.status, "failed");
  EXPECT_EQ(cause.failed_rank, 0);
}

TEST(OutcomeMerge, AStopOnAnothersAbortIsAConsequenceAndLeavesNoRank) {
  ExecutionOutcome mine = failed(-2, "", "stopped on rank 1's abort");
  merge_outcomes(mine, Others{std::nullopt, failed(1, "out_of_memory", "oom")}, 2);
  EXPECT_EQ(mine.failed_rank, 1);
  EXPECT_EQ(mine.failure_kind, "out_of_memory");
  ExecutionOutcome alone = failed(-2, "", "stopped on an abort");
  merge_outcomes(alone, Others{std::nullopt, ok()}, 2);
  EXPECT_EQ(alone.failed_rank, -1);
}

TEST(OutcomeMerge, AllOkStaysOk) {
  ExecutionOutcome mine = ok();
  merge_outcomes(mine, Others{std::nullopt, ok(), ok()}, 3);
  EXPECT_EQ(mine.status, "ok");
  EXPECT_EQ(mine.failed_rank, -1);
}

}  // namespace outcome_merge_test
}  // namespace commbench
