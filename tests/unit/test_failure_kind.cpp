// The kinds of failure a worker reports and the agent decides by (common/failure_kind.h).
#include <gtest/gtest.h>

#include "common/failure_kind.h"

namespace commbench {
namespace {

TEST(FailureKind, EveryKindRoundTripsThroughItsName) {
  for (FailureKind k : {FailureKind::kTimeout, FailureKind::kUnavailable, FailureKind::kUnimplemented,
                        FailureKind::kInvalidArgument, FailureKind::kResourceExhausted, FailureKind::kInternal,
                        FailureKind::kRemote, FailureKind::kStore, FailureKind::kOther})
    EXPECT_EQ(failure_kind_from_name(failure_kind_name(k)), k) << failure_kind_name(k);
}

TEST(FailureKind, PluginStatusesMapToTheirKinds) {
  EXPECT_EQ(failure_kind_of(CB_ERR_TIMEOUT), FailureKind::kTimeout);
  EXPECT_EQ(failure_kind_of(CB_ERR_REMOTE), FailureKind::kRemote);
  EXPECT_EQ(failure_kind_of(CB_ERR_INTERNAL), FailureKind::kInternal);
  EXPECT_EQ(failure_kind_of(CB_ERR_INVALID_ARGUMENT), FailureKind::kInvalidArgument);
  // A status from a newer plugin, and an error object that claims CB_OK: internal, as the core treats them.
  EXPECT_EQ(failure_kind_of(static_cast<cb_status>(99)), FailureKind::kInternal);
  EXPECT_EQ(failure_kind_of(CB_OK), FailureKind::kInternal);
}

TEST(FailureKind, OnlyTimeoutsAndPeersGoingAwayAreConsequences) {
  EXPECT_TRUE(is_consequence(FailureKind::kTimeout));
  EXPECT_TRUE(is_consequence(FailureKind::kRemote));
  for (FailureKind k : {FailureKind::kUnavailable, FailureKind::kInternal, FailureKind::kStore, FailureKind::kOther,
                        FailureKind::kCrash, FailureKind::kOutOfMemory, FailureKind::kInterrupted})
    EXPECT_FALSE(is_consequence(k)) << failure_kind_name(k);
}

TEST(FailureKind, AnUnknownOrMissingNameIsNeverATimeout) {
  // An older worker sends no kind at all: it must not be taken for a timeout.
  EXPECT_EQ(failure_kind_from_name(""), FailureKind::kOther);
  EXPECT_EQ(failure_kind_from_name("timed out"), FailureKind::kOther);
}

}  // namespace
}  // namespace commbench
