// The agents of a job compare what they run with agent 0 when they agree on the job: a task of
// another commbench version stops the job naming both versions; another build of the same version
// runs, with a warning (a host built apart may measure differently).
#include <chrono>
#include <future>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "agent/agent_group.h"
#include "agent_test_helpers.h"
#include "test_common.h"

namespace commbench {
namespace agent_builds_test {  // named: unity builds put several test files in one unit

using namespace std::chrono_literals;
constexpr auto kJoinTimeout = std::chrono::milliseconds(120000);

std::pair<std::unique_ptr<AgentGroup>, std::unique_ptr<AgentGroup>> join_two(const AgentGroupOptions& one) {
  const int port = test::free_port();
  auto zero = std::async(std::launch::async,
                         [=] { return AgentGroup::create(test::agent_options(0, 2, port, kJoinTimeout)); });
  AgentGroupOptions o = one;
  const AgentGroupOptions base = test::agent_options(1, 2, port, kJoinTimeout);
  o.launch = base.launch;
  o.join_timeout = base.join_timeout;
  auto first = std::async(std::launch::async, [=] { return AgentGroup::create(o); });
  return {zero.get(), first.get()};
}

TEST(AgentBuilds, ATaskOfAnotherVersionStopsTheJobNamingBothVersions) {
  AgentGroupOptions o;
  o.build.version = "0.0.1-elsewhere";
  auto [zero, one] = join_two(o);
  auto theirs = std::async(std::launch::async, [&] { return one->agree("digest", "", 60000ms); });
  try {
    zero->agree("digest", "folder", 60000ms);
    ADD_FAILURE() << "agent 0 agreed with a task of another version";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find(std::string("rank 1 runs commbench 0.0.1-elsewhere and rank 0 commbench ") +
                                         COMMBENCH_VERSION),
              std::string::npos)
        << e.what();
  }
  try {
    theirs.get();
    ADD_FAILURE() << "the task of another version went on";
  } catch (const LaunchConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("every task of a job must run the same commbench"), std::string::npos)
        << e.what();
  }
}

TEST(AgentBuilds, AnotherBuildOfTheSameVersionRunsWithAWarning) {
  std::string warned;
  AgentGroupOptions o;
  o.build.build_id = "0123456789abcdef0123";
  o.warn = [&](const std::string& w) { warned += w; };
  auto [zero, one] = join_two(o);
  auto theirs = std::async(std::launch::async, [&] { return one->agree("digest", "", 60000ms); });
  EXPECT_EQ(zero->agree("digest", "folder", 60000ms), "folder");
  EXPECT_EQ(theirs.get(), "folder");
  EXPECT_NE(warned.find("rank 1 runs another build of commbench"), std::string::npos) << warned;
  EXPECT_NE(warned.find("build id 0123456789ab"), std::string::npos) << warned;
}

// A rank 0 from before the check publishes no identity: said as such, not as a timeout.
TEST(AgentBuilds, ARankZeroThatSaysNoVersionRunsAnOlderCommbench) {
  std::string warned;
  const auto why = build_mismatch(3, {"0.2.0", "ab"}, std::nullopt, [&](const std::string& w) { warned += w; });
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("rank 0 runs an older commbench than rank 3 (commbench 0.2.0)"), std::string::npos) << *why;
  EXPECT_FALSE(build_mismatch(3, {"0.2.0", "ab"}, std::string("0.2.0 ab"), [&](const std::string& w) { warned += w; }));
  EXPECT_FALSE(build_mismatch(3, {"0.2.0", ""}, std::string("0.2.0 cd"), [&](const std::string& w) { warned += w; }));
  EXPECT_EQ(warned, "") << "a build without an id cannot be told apart: no warning";
}

TEST(AgentBuilds, TheSameBuildAgreesWithoutAWord) {
  std::string warned;
  AgentGroupOptions o;
  o.warn = [&](const std::string& w) { warned += w; };
  auto [zero, one] = join_two(o);
  auto theirs = std::async(std::launch::async, [&] { return one->agree("digest", "", 60000ms); });
  EXPECT_EQ(zero->agree("digest", "folder", 60000ms), "folder");
  EXPECT_EQ(theirs.get(), "folder");
  EXPECT_EQ(warned, "");
  EXPECT_FALSE(o.build.build_id.empty()) << "the executable has no GNU build id note";
}

}  // namespace agent_builds_test
}  // namespace commbench
