// Who can use a job's bootstrap store (docs/launching.md, "Security"): every job has a token,
// even a local one; a job on one host keeps its store on loopback whatever MASTER_ADDR says; the
// agents of a one-host launch share a token drawn by agent 0 through a file only their user reads.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <future>
#include <thread>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "agent/agent_group.h"
#include "agent/job_token.h"

namespace commbench {
namespace {

using namespace std::chrono_literals;

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

std::pair<std::string, uint16_t> split(const std::string& address) {
  const auto colon = address.rfind(':');
  return {address.substr(0, colon), static_cast<uint16_t>(std::stoi(address.substr(colon + 1)))};
}

// A client presenting `token` to the group's store: "" when let in, else why not.
std::string try_client(const AgentGroup& g, const std::string& token) {
  const auto [host, port] = split(g.store_address());
  try {
    auto client = StoreClient::connect(host, port, 2000ms, token);
    client->set("intruder", Bytes{1});
    return "";
  } catch (const StoreError& e) {
    return e.code() == StoreError::Code::Rejected ? "rejected" : e.what();
  }
}

// One-host torchrun-style agents; TEST-NET-2 as MASTER_ADDR is on no interface of this machine.
LaunchContext one_host_launch(int rank, int count, int port) {
  LaunchContext l;
  l.launcher = "torchrun";
  l.agent_rank = rank;
  l.agent_count = count;
  l.local_rank = rank;
  l.local_count = count;
  l.rendezvous = Rendezvous::kEnv;
  l.master_addr = "198.51.100.7";
  l.master_port = port;
  return l;
}

TEST(StoreSecurity, ALocalRunHasATokenAndItsStoreRefusesEveryOtherToken) {
  AgentGroupOptions o;  // local mode, no user token
  const auto g = AgentGroup::create(o);
  EXPECT_EQ(g->token().size(), 64u) << "a fresh random token per job";
  EXPECT_EQ(split(g->store_address()).first, "127.0.0.1");
  EXPECT_EQ(try_client(*g, "anything"), "rejected");
  EXPECT_EQ(try_client(*g, ""), "rejected");
  EXPECT_EQ(try_client(*g, g->token()), "");
  EXPECT_NE(AgentGroup::create(o)->token(), g->token()) << "each job draws its own";
}

TEST(StoreSecurity, AOneHostLaunchBindsLoopbackWhateverMasterAddrSays) {
  const int port = free_port();
  AgentGroupOptions o0, o1;
  o0.launch = one_host_launch(0, 2, port);
  o1.launch = one_host_launch(1, 2, port);
  o0.join_timeout = o1.join_timeout = 20000ms;
  auto other = std::async(std::launch::async, [&] { return AgentGroup::create(o1); });
  const auto g0 = AgentGroup::create(o0);
  const auto g1 = other.get();
  EXPECT_EQ(g0->store_address(), fmt::format("127.0.0.1:{}", port));
  EXPECT_EQ(g1->store_address(), g0->store_address());
  ASSERT_EQ(g0->token().size(), 64u);
  EXPECT_EQ(g1->token(), g0->token()) << "agent 1 read agent 0's token from the host token file";
  EXPECT_EQ(try_client(*g0, "guess"), "rejected");
}

TEST(StoreSecurity, AStaleTokenFileOfAnEarlierLaunchIsReplaced) {
  const int port = free_port();
  {
    // What a launch killed with SIGKILL leaves behind.
    HostTokenFile stale(fmt::format("port-{}", port));
    std::ofstream(stale.path()) << "stale-token\n";
    ::chmod(stale.path().c_str(), 0600);
  }
  AgentGroupOptions o0, o1;
  o0.launch = one_host_launch(0, 2, port);
  o1.launch = one_host_launch(1, 2, port);
  o0.join_timeout = o1.join_timeout = 20000ms;
  auto first = std::async(std::launch::async, [&] { return AgentGroup::create(o1); });  // may read the stale one
  std::this_thread::sleep_for(300ms);
  const auto g0 = AgentGroup::create(o0);
  const auto g1 = first.get();
  EXPECT_EQ(g1->token(), g0->token());
  EXPECT_NE(g0->token(), "stale-token");
}

TEST(StoreSecurity, AnAgentWhoseRankZeroNeverStartsSaysWhatItWaitedFor) {
  AgentGroupOptions o;
  o.launch = one_host_launch(1, 2, free_port());
  o.join_timeout = 300ms;
  try {
    AgentGroup::create(o);
    FAIL() << "joined a job without rank 0";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("did not share the job token"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("is rank 0's task running?"), std::string::npos) << e.what();
  }
}

TEST(StoreSecurity, TheHostTokenFileIsPrivate) {
  HostTokenFile f("unit-test-" + std::to_string(::getpid()));
  f.publish("secret");
  struct stat st {};
  ASSERT_EQ(::stat(f.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(f.path().parent_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(f.read(std::chrono::steady_clock::now()), "secret");
}

TEST(StoreSecurity, AMultiHostJobStillNeedsTheUsersToken) {
  AgentGroupOptions o;
  o.launch = one_host_launch(0, 4, free_port());
  o.launch.local_count = 2;
  try {
    AgentGroup::create(o);
    FAIL() << "a multi-host job started without a token";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("COMMBENCH_JOB_TOKEN"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace commbench
