// Who can use a job's bootstrap store (docs/launching.md, "Security"): every job has a token,
// even a local one; a job on one host keeps its store on loopback whatever MASTER_ADDR says; the
// agents of a one-host launch share a token drawn by agent 0 through a file only their user reads.
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <poll.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <future>
#include <thread>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "agent/agent_group.h"
#include "test_common.h"
#include "agent/exposure_warnings.h"
#include "agent/job_token.h"
#include "bootstrap/store.h"

namespace commbench {
namespace {

using namespace std::chrono_literals;

using test::free_port;

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

TEST(StoreSecurity, TheHostTokenFileIsGoneOnceEveryAgentHasJoined) {
  const int port = free_port();
  const HostTokenFile where(fmt::format("port-{}", port));  // names the file, writes nothing
  std::filesystem::remove(where.path());                     // whatever an earlier launch left
  AgentGroupOptions o0, o1;
  o0.launch = one_host_launch(0, 2, port);
  o1.launch = one_host_launch(1, 2, port);
  o0.join_timeout = o1.join_timeout = 20000ms;
  // Agent 0 publishes the token, then waits in the meeting for agent 1: the file must appear
  // (which also proves this test looks at the right path) before agent 1 starts.
  auto first = std::async(std::launch::async, [&] { return AgentGroup::create(o0); });
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (!std::filesystem::exists(where.path()) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(std::filesystem::exists(where.path())) << "agent 0 did not share its token through " << where.path();
  const auto g1 = AgentGroup::create(o1);
  const auto g0 = first.get();
  ASSERT_EQ(g1->token(), g0->token()) << "agent 1 read the token from the file";
  // Both groups are alive (the job runs): a launch killed from here on leaves nothing behind.
  EXPECT_FALSE(std::filesystem::exists(where.path())) << where.path() << " outlived the agents' meeting";
  EXPECT_EQ(try_client(*g0, g0->token()), "") << "the store still lets the job's token in";
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
  EXPECT_EQ(f.read(std::chrono::steady_clock::now(), {}), "secret");
}

// The private folder a symbolic link (to a world-writable /tmp): refused, and said to be a link
// (it once read "mode 777", the target's mode).
TEST(StoreSecurity, ASymlinkedTokenFolderIsRefusedAsALink) {
  const std::filesystem::path tmp = std::filesystem::temp_directory_path() / fmt::format("cb-tok-{}", ::getpid());
  std::filesystem::create_directories(tmp);
  std::filesystem::create_directory_symlink("/tmp", tmp / fmt::format("commbench-{}", ::geteuid()));
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  ::setenv("TMPDIR", tmp.c_str(), 1);
  try {
    HostTokenFile f("unit-test-link");
    ADD_FAILURE() << "a symbolic link was used as the private token folder";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("it is a symbolic link"), std::string::npos) << e.what();
  }
  if (old) ::setenv("TMPDIR", saved.c_str(), 1);
  else ::unsetenv("TMPDIR");
  std::filesystem::remove_all(tmp);
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

// ---- issue 28 §1: the rendezvous file of an mpirun launch

namespace fs = std::filesystem;

// mpirun-style agents across "hosts" (one per host), finding rank 0 through `file`, with the
// user's token.
AgentGroupOptions file_launch(int rank, const fs::path& file) {
  AgentGroupOptions o;
  o.launch.launcher = "openmpi";
  o.launch.agent_rank = rank;
  o.launch.agent_count = 2;
  o.launch.local_rank = 0;
  o.launch.local_count = 1;
  o.launch.rendezvous = Rendezvous::kFile;
  o.launch.job_id = "job42";
  o.token = "the-users-token-0123456789abcdef";
  o.bind_host = "127.0.0.1";
  o.rendezvous_file = file.string();
  o.join_timeout = 2000ms;
  return o;
}

// A folder for rendezvous files with the given mode, removed at the end.
class RendezvousDir {
 public:
  explicit RendezvousDir(mode_t mode) : dir_(fs::temp_directory_path() / fmt::format("cb-rdv-{}-{}", ::getpid(), ++count_)) {
    fs::create_directories(dir_);
    ::chmod(dir_.c_str(), mode);
  }
  ~RendezvousDir() { fs::remove_all(dir_); }
  fs::path file() const { return dir_ / ".rendezvous-job42"; }

 private:
  static inline int count_ = 0;
  fs::path dir_;
};

// What an impostor's listener receives within `wait`.
class Listener {
 public:
  Listener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    ::listen(fd_, 4);
    socklen_t len = sizeof(a);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 3000) <= 0) return;
      const int c = ::accept(fd_, nullptr, nullptr);
      connected_ = true;
      char buf[4096];
      pollfd q{c, POLLIN, 0};
      ssize_t n = 0;
      while (::poll(&q, 1, 1000) > 0 && (n = ::recv(c, buf, sizeof(buf), 0)) > 0) heard_.append(buf, static_cast<size_t>(n));
      ::close(c);
    });
  }
  ~Listener() {
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }
  uint16_t port() const { return port_; }
  // Waits for the listener to finish; what it heard.
  std::string heard() {
    if (thread_.joinable()) thread_.join();
    return heard_;
  }
  bool connected() {
    heard();
    return connected_;
  }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  bool connected_ = false;
  std::string heard_;
};

TEST(RendezvousFile, OnePlantedByAnotherUserIsRefusedAndItsListenerLearnsNothing) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to plant a file that belongs to another user";
  RendezvousDir dir(01777);  // like /tmp: anyone may create files in it
  Listener impostor;
  {
    std::ofstream(dir.file()) << "job42\n127.0.0.1\n" << impostor.port() << "\n";
  }
  ASSERT_EQ(::chown(dir.file().c_str(), 65534, 65534), 0);
  ::chmod(dir.file().c_str(), 0600);
  const auto o1 = file_launch(1, dir.file());
  try {
    AgentGroup::create(o1);
    FAIL() << "rank 1 used a rendezvous file another user wrote";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("belongs to uid 65534"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(impostor.connected()) << "rank 1 connected to the planted address";
  EXPECT_EQ(impostor.heard().find(o1.token), std::string::npos) << "the job token reached the impostor";
}

TEST(RendezvousFile, RankZeroRefusesAPlantedFileInsteadOfOverwritingIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to plant a file that belongs to another user";
  RendezvousDir dir(01777);
  {
    std::ofstream(dir.file()) << "job42\n198.51.100.7\n1\n";
  }
  ASSERT_EQ(::chown(dir.file().c_str(), 65534, 65534), 0);
  try {
    AgentGroup::create(file_launch(0, dir.file()));
    FAIL() << "rank 0 published over a file another user planted";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("already exists and it belongs to uid 65534"), std::string::npos) << e.what();
  }
  // Refused, and left for its owner and as evidence: it was once removed on the way out.
  struct stat st {};
  ASSERT_EQ(::lstat(dir.file().c_str(), &st), 0) << "rank 0 deleted the file it refused";
  EXPECT_EQ(st.st_uid, 65534u);
}

// COMMBENCH_RENDEZVOUS_FILE naming a file of the user's that is not a rendezvous file (the
// experiment file, say): refused, never replaced or removed. It was deleted once.
TEST(RendezvousFile, RankZeroNeverReplacesAFileThatIsNotARendezvousFile) {
  RendezvousDir dir(0700);
  const std::string experiment = "name = \"keep me\"\n[[run]]\nbackend = \"gloo\"\n";
  {
    std::ofstream(dir.file()) << experiment;
  }
  ::chmod(dir.file().c_str(), 0600);
  try {
    AgentGroup::create(file_launch(0, dir.file()));
    FAIL() << "rank 0 published over a file that is not a rendezvous file";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("is not a rendezvous file"), std::string::npos) << e.what();
  }
  std::ifstream in(dir.file());
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), experiment);
}

// A stale rendezvous file of the user's (an earlier job's) is replaced, and the job's own file is
// removed when the job ends.
TEST(RendezvousFile, AStaleFileOfOursIsReplacedAndOursRemovedAtTheEnd) {
  RendezvousDir dir(0700);
  {
    std::ofstream(dir.file()) << "old-job\n127.0.0.1\n4242\n";
  }
  ::chmod(dir.file().c_str(), 0600);
  const auto o0 = file_launch(0, dir.file()), o1 = file_launch(1, dir.file());
  {
    auto other = std::async(std::launch::async, [&] { return AgentGroup::create(o1); });
    const auto g0 = AgentGroup::create(o0);
    const auto g1 = other.get();
    EXPECT_EQ(g1->store_address(), g0->store_address());
  }
  struct stat st {};
  EXPECT_NE(::lstat(dir.file().c_str(), &st), 0) << "the job's rendezvous file outlived the job";
}

// A probe: a second rank 0 (another job given the same COMMBENCH_RENDEZVOUS_FILE, or the same
// task started twice) replaced the file of a job that was still running; that job's rank 1 then
// joined the wrong store and both jobs failed. A file whose store still listens is left alone.
TEST(RendezvousFile, AFileWhoseStoreStillRunsIsNotReplaced) {
  RendezvousDir dir(0700);
  const auto running = StoreServer::start({});  // the first job's store, still serving
  {
    std::ofstream(dir.file()) << fmt::format("first-job\n127.0.0.1\n{}\n", running->port());
  }
  ::chmod(dir.file().c_str(), 0600);
  try {
    AgentGroup::create(file_launch(0, dir.file()));
    FAIL() << "rank 0 replaced the rendezvous file of a running job";
  } catch (const LaunchConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("is in use: it names a store that is still running"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("job 'first-job'"), std::string::npos) << e.what();
  }
  std::ifstream in(dir.file());
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}),
            fmt::format("first-job\n127.0.0.1\n{}\n", running->port()))
      << "the running job's file was changed";
}

// A second probe: another user listening on a stale file's port (any user can see the port) made
// every later rank 0 refuse the file as "in use". On this host only a store of this user's counts.
TEST(RendezvousFile, AnotherUsersListenerOnAStaleFilesPortDoesNotBlockTheJob) {
  if (::geteuid() != 0 || std::system("command -v setpriv >/dev/null && test -x /usr/bin/python3") != 0)
    GTEST_SKIP() << "needs root, setpriv and python3 to listen as another user";
  RendezvousDir dir(0700);
  const std::string out = dir.file().string() + ".squatter";
  ASSERT_EQ(std::system(fmt::format(
                "setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c 'import os,socket,time\n"
                "s=socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen()\n"
                "print(s.getsockname()[1], os.getpid(), flush=True); time.sleep(60)' > {} 2>&1 &",
                out).c_str()),
            0);
  int port = 0, pid = 0;
  for (int i = 0; i < 100 && !(std::ifstream(out) >> port >> pid); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_GT(pid, 0) << "the other user's listener did not start";
  {
    std::ofstream(dir.file()) << fmt::format("old-job\n127.0.0.1\n{}\n", port);
  }
  ::chmod(dir.file().c_str(), 0600);
  const auto o0 = file_launch(0, dir.file()), o1 = file_launch(1, dir.file());
  try {
    auto other = std::async(std::launch::async, [&] { return AgentGroup::create(o1); });
    const auto g0 = AgentGroup::create(o0);
    const auto g1 = other.get();
    EXPECT_EQ(g1->store_address(), g0->store_address());
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
  ::kill(pid, SIGKILL);
}

// A review: a stale file's port taken by a program of ours that accepts and never answers (or
// never accepts: the kernel completes the handshake) held rank 0 30 s in the store's HELLO before
// it called the file stale. The probe gives up after a second.
TEST(RendezvousFile, AStaleFilesPortHeldBySomethingSilentIsNotWaitedOnForLong) {
  RendezvousDir dir(0700);
  const int silent = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(silent, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(silent, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(silent, 16), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(silent, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  {
    std::ofstream(dir.file()) << fmt::format("old-job\n127.0.0.1\n{}\n", ntohs(addr.sin_port));
  }
  ::chmod(dir.file().c_str(), 0600);
  const auto o0 = file_launch(0, dir.file()), o1 = file_launch(1, dir.file());
  const auto t0 = std::chrono::steady_clock::now();
  try {
    auto other = std::async(std::launch::async, [&] { return AgentGroup::create(o1); });
    const auto g0 = AgentGroup::create(o0);
    const auto g1 = other.get();
    EXPECT_EQ(g1->store_address(), g0->store_address());
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 15.0);
  ::close(silent);
}

// No job id, no file to name: every task refuses at once (rank 1 once waited out the whole
// rendezvous timeout for ".rendezvous-").
TEST(RendezvousFile, WithoutAJobIdEveryTaskRefusesAtOnce) {
  RendezvousDir dir(0700);
  for (int rank : {0, 1}) {
    auto o = file_launch(rank, dir.file());
    o.launch.job_id.clear();
    o.join_timeout = std::chrono::milliseconds(60000);
    const auto began = std::chrono::steady_clock::now();
    try {
      AgentGroup::create(o);
      ADD_FAILURE() << "rank " << rank << " started without a job id";
    } catch (const LaunchError& e) {
      EXPECT_NE(std::string(e.what()).find("gives no job id"), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(30)) << "rank " << rank << " waited";
  }
}

TEST(RendezvousFile, AFolderOthersCanWriteWithoutTheStickyBitIsRefused) {
  RendezvousDir dir(0777);
  try {
    AgentGroup::create(file_launch(0, dir.file()));
    FAIL() << "rank 0 published where anyone could replace the file";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("which other users can write"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("COMMBENCH_RENDEZVOUS_FILE"), std::string::npos) << e.what();
  }
}

TEST(RendezvousFile, AgentsInAPrivateFolderMeetAndTheFileIsTheirsOnly) {
  RendezvousDir dir(0700);
  const auto o0 = file_launch(0, dir.file()), o1 = file_launch(1, dir.file());
  auto other = std::async(std::launch::async, [&] { return AgentGroup::create(o1); });
  const auto g0 = AgentGroup::create(o0);
  const auto g1 = other.get();
  EXPECT_EQ(g1->store_address(), g0->store_address());
  struct stat st {};
  ASSERT_EQ(::stat(dir.file().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, ::geteuid());
}

// ---- issue 28 §15: listening wider than needed is said

TEST(ExposureWarnings, AStoreOnEveryInterfaceIsWarnedAbout) {
  const auto w = wildcard_store_warning("0.0.0.0", "MASTER_ADDR");
  ASSERT_TRUE(w.has_value());
  EXPECT_NE(w->find("listens on every interface (MASTER_ADDR=0.0.0.0)"), std::string::npos) << *w;
  EXPECT_TRUE(wildcard_store_warning("::", "COMMBENCH_STORE_BIND").has_value());
  EXPECT_FALSE(wildcard_store_warning("10.0.0.1", "MASTER_ADDR").has_value());
  EXPECT_FALSE(wildcard_store_warning("127.0.0.1", "MASTER_ADDR").has_value());
}

TEST(ExposureWarnings, TwoAgentsWithMasterAddrZeroWarnAndStillMeet) {
  const int port = free_port();
  AgentGroupOptions o0, o1;
  o0.launch = one_host_launch(0, 2, port);
  o1.launch = one_host_launch(1, 2, port);
  for (auto* o : {&o0, &o1}) {
    o->launch.master_addr = "0.0.0.0";
    o->launch.local_count = 1;  // "across hosts": the store binds MASTER_ADDR
    o->token = "tok-0123456789";
    o->join_timeout = 20000ms;
  }
  std::vector<std::string> warnings;
  o0.warn = [&](const std::string& w) { warnings.push_back(w); };
  auto other = std::async(std::launch::async, [&] { return AgentGroup::create(o1); });
  const auto g0 = AgentGroup::create(o0);
  other.get();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("0.0.0.0"), std::string::npos) << warnings[0];
}

TEST(ExposureWarnings, AnInheritedUcxNetDevicesForALocalRunIsWarnedAbout) {
  Execution e;
  e.backend = "ucx";
  e.run = "r";
  const std::vector<Execution> plan{e};
  EXPECT_EQ(inherited_exposure_warnings(plan, {{"UCX_NET_DEVICES", "all"}}, true).size(), 1u);
  EXPECT_EQ(inherited_exposure_warnings(plan, {{"UCX_NET_DEVICES", "eth0,lo"}}, true).size(), 1u);
  EXPECT_TRUE(inherited_exposure_warnings(plan, {{"UCX_NET_DEVICES", "lo"}}, true).empty());
  EXPECT_TRUE(inherited_exposure_warnings(plan, {}, true).empty());
  EXPECT_TRUE(inherited_exposure_warnings(plan, {{"UCX_NET_DEVICES", "all"}}, false).empty()) << "across hosts it is needed";
  Execution own = e;
  own.env["UCX_NET_DEVICES"] = "all";  // the run's own env table: a choice, not an inheritance
  EXPECT_TRUE(inherited_exposure_warnings({own}, {{"UCX_NET_DEVICES", "all"}}, true).empty());
  Execution gloo = e;
  gloo.backend = "gloo";
  EXPECT_TRUE(inherited_exposure_warnings({gloo}, {{"UCX_NET_DEVICES", "all"}}, true).empty());
}

}  // namespace
}  // namespace commbench
