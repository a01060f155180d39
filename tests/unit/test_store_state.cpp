// StoreState without sockets: values, counters, prefix deletion, and the parked-waiter logic.
#include <gtest/gtest.h>

#include "bootstrap/store_state.h"

namespace commbench {
namespace {

using Clock = StoreState::Clock;
using Ids = std::vector<StoreState::WaiterId>;

StoreState::Bytes b(const std::string& s) {
  return StoreState::Bytes(s.begin(), s.end());
}

TEST(StoreState, SetFindOverwrite) {
  StoreState s;
  Ids woken;
  EXPECT_EQ(s.find("k"), nullptr);
  s.set("k", b("one"), woken);
  ASSERT_NE(s.find("k"), nullptr);
  EXPECT_EQ(*s.find("k"), b("one"));
  s.set("k", b("two"), woken);
  EXPECT_EQ(*s.find("k"), b("two"));
  EXPECT_EQ(s.key_count(), 1u);
  EXPECT_TRUE(woken.empty());
}

TEST(StoreState, AddCountsAndRefusesNonCounters) {
  StoreState s;
  Ids woken;
  EXPECT_EQ(s.add("n", 5, woken), 5);
  EXPECT_EQ(s.add("n", -7, woken), -2);
  s.set("text", b("hello"), woken);
  EXPECT_EQ(s.add("text", 1, woken), std::nullopt);
  EXPECT_EQ(*s.find("text"), b("hello"));  // untouched
}

TEST(StoreState, ErasePrefixIsExactlyThePrefix) {
  StoreState s;
  Ids woken;
  for (const char* k : {"run/1/a", "run/1/b", "run/10/a", "run/2/a", "run/1"}) s.set(k, {}, woken);
  EXPECT_EQ(s.erase_prefix("run/1/"), 2u);
  EXPECT_EQ(s.find("run/1/a"), nullptr);
  EXPECT_NE(s.find("run/10/a"), nullptr);
  EXPECT_NE(s.find("run/1"), nullptr);
  EXPECT_EQ(s.erase_prefix("nothing"), 0u);
  EXPECT_EQ(s.erase_prefix(""), 3u);  // the empty prefix matches everything
  EXPECT_EQ(s.key_count(), 0u);
}

TEST(StoreState, WaiterWakesOnlyWhenItsLastKeyArrives) {
  StoreState s;
  Ids woken;
  s.set("a", b("1"), woken);
  s.park(7, {"a", "b", "c"}, Clock::time_point::max());
  EXPECT_EQ(s.missing({"a", "b", "c"}), (std::vector<uint32_t>{1, 2}));
  s.set("b", b("2"), woken);
  EXPECT_TRUE(woken.empty());
  s.add("c", 1, woken);  // ADD creates keys too
  EXPECT_EQ(woken, Ids{7});
  EXPECT_EQ(s.take(7), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(s.parked_count(), 0u);
  EXPECT_EQ(s.watched_key_count(), 0u);
}

TEST(StoreState, DuplicateKeysInOneWaitCountOnce) {
  StoreState s;
  Ids woken;
  s.park(1, {"x", "x"}, Clock::time_point::max());
  s.set("x", {}, woken);
  EXPECT_EQ(woken, Ids{1});
}

TEST(StoreState, DeadlinesExpireInOrder) {
  StoreState s;
  const auto now = Clock::now();
  s.park(1, {"k"}, now + std::chrono::milliseconds(20));
  s.park(2, {"k"}, now + std::chrono::milliseconds(10));
  s.park(3, {"k"}, Clock::time_point::max());
  EXPECT_EQ(s.next_deadline(), now + std::chrono::milliseconds(10));
  EXPECT_TRUE(s.expired(now).empty());
  EXPECT_EQ(s.expired(now + std::chrono::milliseconds(15)), Ids{2});
  EXPECT_EQ(s.expired(now + std::chrono::hours(1)), (Ids{2, 1}));  // never-expiring 3 excluded
}

TEST(StoreState, CancelledWaitersLeaveNothingBehind) {
  // A long run with many timed-out waits must not accumulate watcher entries.
  StoreState s;
  for (StoreState::WaiterId id = 0; id < 100; ++id) {
    s.park(id, {"never/" + std::to_string(id % 10), "shared"}, Clock::now());
  }
  EXPECT_EQ(s.watched_key_count(), 11u);
  for (StoreState::WaiterId id : s.expired(Clock::now())) s.cancel(id);
  EXPECT_EQ(s.parked_count(), 0u);
  EXPECT_EQ(s.watched_key_count(), 0u);
  EXPECT_EQ(s.next_deadline(), std::nullopt);
  Ids woken;
  s.set("shared", {}, woken);
  EXPECT_TRUE(woken.empty());  // cancelled waiters are not woken
}

TEST(StoreState, DeletedKeyShowsUpAsMissingAgainAfterWake) {
  // The server re-checks after a wake-up because a DELETE_PREFIX may have removed a key the
  // waiter had already counted.
  StoreState s;
  Ids woken;
  s.set("a", {}, woken);
  s.park(1, {"a", "b"}, Clock::time_point::max());
  s.erase_prefix("a");
  s.set("b", {}, woken);
  ASSERT_EQ(woken, Ids{1});
  auto keys = s.take(1);
  EXPECT_EQ(s.missing(keys), (std::vector<uint32_t>{0}));
}

}  // namespace
}  // namespace commbench
