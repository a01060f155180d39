// Waits of one agent for the others end on a signal (Ctrl-C, the launcher's SIGTERM): joining,
// agreeing on the experiment and waiting for the job's end once waited out their whole timeout
// (minutes) before the agent noticed. g_interrupt_signal is what the agents' signal handler sets;
// the agents here share one process, so a "signal" reaches all of them at once.

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "agent/agent_group.h"
#include "agent/execution_monitor.h"
#include "agent_test_helpers.h"
#include "bootstrap/store.h"
#include "test_common.h"

namespace commbench {
namespace agent_interrupts_test {  // named: unity builds put several test files in one unit

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using test::free_port;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Far longer than any test waits: only the signal can end a wait.
constexpr auto kJoinTimeout = std::chrono::milliseconds(120000);

AgentGroupOptions agent_options(int k, int count, int port) { return test::agent_options(k, count, port, kJoinTimeout); }
std::vector<std::unique_ptr<AgentGroup>> join_agents(int count) { return test::join_agents(count, kJoinTimeout); }

// Sets the "signal" after `delay`, and clears it when the test ends whatever happens.
class SignalAfter {
 public:
  explicit SignalAfter(std::chrono::milliseconds delay)
      : thread_([delay] {
          std::this_thread::sleep_for(delay);
          g_interrupt_signal.store(2);
        }) {}
  ~SignalAfter() {
    thread_.join();
    g_interrupt_signal.store(0);
  }

 private:
  std::thread thread_;
};

TEST(AgentInterrupts, AStoreWaitWithAStopCheckEndsWithinItsIntervalAndLeavesTheClientUnusable) {
  auto server = StoreServer::start({});
  auto client = StoreClient::connect(server->host(), server->port(), 5s);
  std::atomic<bool> stop{false};
  client->set_stop_check([&] { return stop.load(); });
  std::thread later([&] {
    std::this_thread::sleep_for(300ms);
    stop = true;
  });
  const auto t0 = Clock::now();
  try {
    client->get("never", 60000ms);
    ADD_FAILURE() << "a GET of a key nobody sets returned";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreError::Code::Interrupted) << e.what();
  }
  later.join();
  EXPECT_LT(seconds_since(t0), 5.0) << "the stop check was not looked at while waiting";
  EXPECT_GE(seconds_since(t0), 0.25);
  try {
    client->set("k", Bytes{1});
    ADD_FAILURE() << "a client whose wait was cut short is out of step and must refuse";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreError::Code::Connection);
  }
  // Without a stop check, the same wait lasts its timeout.
  auto plain = StoreClient::connect(server->host(), server->port(), 5s);
  EXPECT_THROW(plain->get("never", 300ms), StoreError);
}

TEST(AgentInterrupts, AnAgentInterruptedWhileAgreeingLeavesAndAgentZeroEndsTheJobAsInterrupted) {
  auto agents = join_agents(2);
  const auto t0 = Clock::now();
  {
    SignalAfter signal(300ms);
    // Agent 0 never publishes the plan: agent 1 waits for it until the signal.
    try {
      agents[1]->agree("digest", "", 600000ms);
      ADD_FAILURE() << "agree returned without agent 0's plan";
    } catch (const LaunchInterrupted& e) {
      EXPECT_NE(std::string(e.what()).find("interrupted by signal 2"), std::string::npos) << e.what();
    }
    EXPECT_LT(seconds_since(t0), 5.0) << "agent 1 waited out its timeout despite the signal";
  }
  // Agent 0 (no signal of its own now) learns at once that agent 1 left interrupted.
  const auto t1 = Clock::now();
  try {
    agents[0]->agree("digest", "folder", 600000ms);
    ADD_FAILURE() << "agent 0 agreed with an agent that left";
  } catch (const LaunchInterrupted& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1's agent left before the job started: interrupted by signal 2"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(seconds_since(t1), 5.0);
}

TEST(AgentInterrupts, AgentZeroTellsTheAgentsWhyTheJobStoppedWhileTheyAgree) {
  auto agents = join_agents(3);
  // Agent 1 read another experiment; agent 2 read the same as agent 0 and hears the verdict
  // (it used to wait out the barrier's timeout, then blame the store).
  auto one = std::async(std::launch::async, [&] { return agents[1]->agree("other", "", 600000ms); });
  auto two = std::async(std::launch::async, [&] { return agents[2]->agree("digest", "", 600000ms); });
  const auto t0 = Clock::now();
  EXPECT_THROW(agents[0]->agree("digest", "folder", 600000ms), LaunchError);
  EXPECT_THROW(one.get(), LaunchError);
  try {
    two.get();
    ADD_FAILURE() << "agent 2 went on with a job agent 0 stopped";
  } catch (const LaunchInterrupted& e) {
    ADD_FAILURE() << "a different experiment is a failure, not an interruption: " << e.what();
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 read a different experiment"), std::string::npos) << e.what();
  }
  EXPECT_LT(seconds_since(t0), 10.0);
}

TEST(AgentInterrupts, AgentZeroWaitingForTasksToJoinStopsOnASignalAndSoDoTheArrivedOnes) {
  const int port = free_port();
  // Three agents launched, two arrive: both wait for the third until the signal.
  auto zero = std::async(std::launch::async, [=] { return AgentGroup::create(agent_options(0, 3, port)); });
  auto one = std::async(std::launch::async, [=] { return AgentGroup::create(agent_options(1, 3, port)); });
  const auto t0 = Clock::now();
  SignalAfter signal(800ms);
  EXPECT_THROW(zero.get(), LaunchInterrupted);
  EXPECT_THROW(one.get(), LaunchInterrupted);
  EXPECT_LT(seconds_since(t0), 6.0) << "the join waited for the absent task despite the signal";
}

TEST(AgentInterrupts, AnAgentWaitingForTheJobsEndLeavesOnASignalAndAgentZeroDoesNotWaitForIt) {
  auto agents = join_agents(2);
  const auto t0 = Clock::now();
  {
    SignalAfter signal(300ms);
    EXPECT_THROW(agents[1]->wait_for_finish(600000ms), LaunchInterrupted);
    EXPECT_LT(seconds_since(t0), 5.0);
  }
  // Agent 0's finish waits (up to 10 s) only for agents that will read the exit code.
  const auto t1 = Clock::now();
  agents[0]->finish(0);
  EXPECT_LT(seconds_since(t1), 5.0) << "agent 0 waited for an agent that had announced leaving";
}

TEST(AgentInterrupts, OnlyAnAgentThatLeftInterruptedMakesTheJobInterrupted) {
  auto agents = join_agents(3);
  agents[1]->announce_leaving({false, "its log folder could not be created"});
  agents[2]->announce_leaving({true, "interrupted by signal 15 (SIGTERM)"});
  const auto verdict = agents[0]->start_execution(0, 3, 5000ms);
  ASSERT_TRUE(verdict.has_value());
  EXPECT_NE(verdict->find("it left the job: its log folder could not be created"), std::string::npos) << *verdict;
  EXPECT_FALSE(agents[0]->peer_left(2)) << "rank 1 left on an error, not a signal";
  EXPECT_TRUE(agents[0]->peer_left(3));
}

}  // namespace agent_interrupts_test
}  // namespace commbench
