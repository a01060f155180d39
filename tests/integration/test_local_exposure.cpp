// What another local user can reach of a local run (issue 17, docs/launching.md "Security"):
// the agent's store listens on loopback only and refuses any client without the job's token;
// UCX workers listen on no interface but loopback; an environment that does not say whether the
// job spans hosts is refused before anything listens.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "../unit/test_common.h"
#include "bootstrap/store.h"
#include "job_harness.h"
#include "process_watch.h"

namespace commbench::testing {
namespace {

using namespace std::chrono_literals;

const char* kLongGlooRun = R"(
name = "exposure"
[[run]]
backend = "gloo"
world_size = 2
ops = ["allreduce"]
sizes = ["4MiB"]
iterations = 100000
timeout = "120s"
)";

TEST(LocalExposure, TheStoreOfALocalRunIsOnLoopbackAndRefusesAWrongToken) {
  JobDir dir;
  const auto file = dir.write("long.toml", kLongGlooRun);
  BackgroundCommbench job({"run", file.string(), "-o", (dir.path() / "out").string(), "--quiet"}, dir.path(),
                          dir.path() / "run.txt");
  // The store is up before the first worker starts; wait for the workers, so it surely is.
  std::vector<TcpListener> listeners;
  for (int i = 0; i < 400 && (listeners.empty() || workers_logging_under(dir.path()).size() < 2); ++i) {
    std::this_thread::sleep_for(50ms);
    listeners = listening_sockets(job.pid());
  }
  ASSERT_EQ(listeners.size(), 1u) << "the agent listens on one socket, its store: " << read_text(dir.path() / "run.txt");
  EXPECT_EQ(listeners[0].address, "127.0.0.1") << "a local run's store is reachable from other hosts";
  for (const std::string token : {"", "guessed-token"}) {
    try {
      auto intruder = StoreClient::connect("127.0.0.1", static_cast<uint16_t>(listeners[0].port), 2000ms, token);
      intruder->delete_prefix("");  // what hung every rank of a run until its timeout (issue 17)
      ADD_FAILURE() << "a client with token '" << token << "' was let in and could delete every key";
    } catch (const StoreError& e) {
      EXPECT_EQ(e.code(), StoreError::Code::Rejected) << e.what();
    }
  }
  // The job is unharmed: stopped on purpose, it ends as an interrupted job, nothing failed.
  std::this_thread::sleep_for(500ms);
  ::kill(job.pid(), SIGTERM);
  EXPECT_EQ(job.wait(30), 130) << read_text(dir.path() / "run.txt");
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u);
  EXPECT_EQ(execs[0]["status"], "interrupted") << execs[0].dump();
  EXPECT_NE(read_text(dir.path() / "run.txt").find("rejected client"), std::string::npos)
      << "the store logs the clients it refuses";
}

TEST(LocalExposure, WorkerCommandLinesCarryNoToken) {
  JobDir dir;
  const auto file = dir.write("long.toml", kLongGlooRun);
  BackgroundCommbench job({"run", file.string(), "-o", (dir.path() / "out").string(), "--quiet"}, dir.path(),
                          dir.path() / "run.txt");
  std::vector<pid_t> workers;
  for (int i = 0; i < 400 && workers.size() < 2; ++i) {
    std::this_thread::sleep_for(50ms);
    workers = workers_logging_under(dir.path());
  }
  ASSERT_EQ(workers.size(), 2u) << read_text(dir.path() / "run.txt");
  for (pid_t w : workers) {
    const std::string env = read_text(fmt::format("/proc/{}/environ", w));
    const auto at = env.find("COMMBENCH_STORE_TOKEN=");
    ASSERT_NE(at, std::string::npos) << "the worker got no token";
    const std::string token = env.substr(at + 22, env.find('\0', at) - at - 22);
    EXPECT_EQ(token.size(), 64u);
    EXPECT_EQ(read_text(fmt::format("/proc/{}/cmdline", w)).find(token), std::string::npos);
    EXPECT_EQ(read_text(fmt::format("/proc/{}/cmdline", job.pid())).find(token), std::string::npos);
  }
  ::kill(job.pid(), SIGTERM);
  EXPECT_EQ(job.wait(30), 130);
}

// UCX's TCP transport listens on every network device it uses. In a network namespace with an
// external-looking interface besides loopback (tests/integration/local_listeners_netns.sh), a
// local UCX run must listen on loopback only. Skipped where namespaces cannot be made.
TEST(LocalExposure, UcxWorkersOfALocalRunListenOnLoopbackOnly) {
  JobDir dir;
  const auto file = dir.write("ucx.toml", R"(
name = "ucx-local"
[[run]]
name = "default-transports"
backend = "ucx"
world_sizes = [2, 3]
ops = ["allreduce", "pingpong"]
sizes = ["4KiB", "1MiB"]
iterations = 200
[[run]]
name = "tcp"
backend = "ucx"
world_size = 2
ops = ["allreduce"]
sizes = ["4KiB"]
iterations = 200
[run.options.ucx]
transports = "tcp"
)");
  const std::string cmd = fmt::format("{}/tests/integration/local_listeners_netns.sh {} {} {} {} > {}/netns.txt 2>&1",
                                      COMMBENCH_SOURCE_DIR, COMMBENCH_BIN, file.string(),
                                      (dir.path() / "out").string(), (dir.path() / "samples").string(),
                                      dir.path().string());
  const int rc = WEXITSTATUS(std::system(cmd.c_str()));
  if (rc == 77) GTEST_SKIP() << read_text(dir.path() / "netns.txt");
  ASSERT_EQ(rc, 0) << read_text(dir.path() / "netns.txt");
  EXPECT_EQ(read_text(dir.path() / "samples/exit"), "0\n") << read_text(dir.path() / "samples/run.txt");
  size_t seen = 0;
  for (const bool v6 : {false, true}) {
    for (const auto& l : decode_listeners(read_text(dir.path() / (v6 ? "samples/listen6" : "samples/listen4")), v6)) {
      ++seen;
      EXPECT_TRUE(l.loopback()) << "something listened on " << l.address << ":" << l.port << " during a local run";
    }
  }
  EXPECT_GT(seen, 0u) << "the sampling saw no listener at all (not even the store)";
  size_t execs = 0;
  for (const auto& e : dir.records("execution")) {
    ++execs;
    EXPECT_EQ(e["status"], "ok") << e.dump();
    EXPECT_NE(e["metadata"]["ranks"]["0"]["backend"].value("net_devices", "").find("lo"), std::string::npos) << e.dump();
  }
  EXPECT_EQ(execs, 3u);
}

TEST(LocalExposure, AnEnvironmentThatDoesNotSayWhetherTheJobSpansHostsIsRefused) {
  JobDir dir;
  const auto file = dir.write("x.toml", kLongGlooRun);
  const std::string out = (dir.path() / "o.txt").string();
  // torchrun-style variables without LOCAL_WORLD_SIZE: refused before any store listens.
  const int rc = std::system(fmt::format("RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29999 {} run {} -o {} > {} 2>&1",
                                         COMMBENCH_BIN, file.string(), (dir.path() / "out").string(), out).c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 2) << read_text(out);
  EXPECT_NE(read_text(out).find("LOCAL_WORLD_SIZE is not"), std::string::npos) << read_text(out);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "out")) << "nothing ran";
}

// Issue 28 §2: 300 connections that never authenticate, held open against a job whose agent may
// open 256 descriptors. They once took every descriptor the agent had, and its executions failed
// with "Too many open files"; now the store holds few of them and keeps descriptors for the
// workers, and every execution runs.
TEST(LocalExposure, IdleConnectionsToTheStoreCannotStarveTheJob) {
  JobDir dir;
  std::string runs = "name = \"starve\"\n";
  for (int i = 0; i < 6; ++i)
    runs += fmt::format("[[run]]\nname = \"r{}\"\nbackend = \"gloo\"\nworld_size = 2\nops = [\"allreduce\"]\n"
                        "sizes = [\"4KiB\"]\niterations = 3\n", i);
  const auto file = dir.write("starve.toml", runs);
  rlimit saved{};
  ::getrlimit(RLIMIT_NOFILE, &saved);
  rlimit low = saved;
  low.rlim_cur = 256;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  BackgroundCommbench job({"run", file.string(), "-o", (dir.path() / "out").string(), "--quiet"}, dir.path(),
                          dir.path() / "run.txt");  // inherits the limit
  ::setrlimit(RLIMIT_NOFILE, &saved);
  std::vector<TcpListener> listeners;
  for (int i = 0; i < 2000 && listeners.empty(); ++i) {
    std::this_thread::sleep_for(5ms);
    listeners = listening_sockets(job.pid());
  }
  ASSERT_FALSE(listeners.empty()) << read_text(dir.path() / "run.txt");
  std::vector<int> idle;
  for (int i = 0; i < 300; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(listeners[0].port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    idle.push_back(fd);
  }
  const int rc = job.wait(240);
  for (int fd : idle) ::close(fd);
  EXPECT_EQ(rc, 0) << read_text(dir.path() / "run.txt");
  const auto execs = dir.records("execution");
  EXPECT_EQ(execs.size(), 6u);
  for (const auto& e : execs) EXPECT_EQ(e["status"], "ok") << e.dump();
}

// Issue 28 §15: a store bound to every interface, and an inherited UCX_NET_DEVICES that opens a
// local UCX run's listeners on external interfaces, are warned about.
TEST(LocalExposure, ListeningWiderThanNeededIsWarnedAbout) {
  JobDir dir;
  const auto file = dir.write("x.toml", R"(name = "wide"
[[run]]
backend = "gloo"
world_size = 2
ops = ["allreduce"]
sizes = ["4KiB"]
iterations = 2
)");
  // Two tasks that say they are on different hosts, with the user's token and MASTER_ADDR=0.0.0.0,
  // on a port that was free (a port picked from the pid fell in the ephemeral range and was taken
  // once in CI).
  const std::string cmd = fmt::format(
      "bash -c 'for r in 0 1; do RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=0.0.0.0 "
      "MASTER_PORT={} COMMBENCH_JOB_TOKEN=0123456789abcdef {} run {} -o {} --quiet > {}/task-$r.log 2>&1 & done; wait'",
      test::free_port(), COMMBENCH_BIN, file.string(), (dir.path() / "out").string(), dir.path().string());
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string task0 = read_text(dir.path() / "task-0.log");
  EXPECT_NE(task0.find("listens on every interface (MASTER_ADDR=0.0.0.0)"), std::string::npos) << task0;

  if (!plugin_built("ucx")) GTEST_SKIP() << "ucx plugin not built";
  JobDir ucx;
  const auto ucx_file = ucx.write("u.toml", R"(name = "ucx-wide"
[[run]]
name = "local-ucx"
backend = "ucx"
world_size = 2
ops = ["allreduce"]
sizes = ["4KiB"]
iterations = 2
)");
  const auto r = run_shell(fmt::format("cd {} && UCX_NET_DEVICES=all {} run {} -o out --quiet",
                                       shell_quote(ucx.path().string()), shell_quote(COMMBENCH_BIN),
                                       shell_quote(ucx_file.string())));
  EXPECT_NE(r.output.find("UCX_NET_DEVICES=all is inherited from your environment"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("'local-ucx'"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace commbench::testing
