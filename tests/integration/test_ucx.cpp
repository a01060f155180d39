// The ucx backend through the real runner: the all-pairs sweep on 4 ranks with its matrices and
// execution log, the side-by-side comparison with gloo, every collective algorithm forced, the
// plugin's options, and bad options failing fast with the option named.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "job_harness.h"

namespace commbench::testing {
namespace {

std::vector<std::string> lines_of(const std::filesystem::path& p) {
  std::istringstream in(read_text(p));
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// Runs an experiment named `name` made of `runs` ([[run]] tables), expecting every case to be ok
// and right; returns how many were, per run.
std::map<std::string, int> correct_cases_per_run(JobDir& dir, const std::string& name, const std::string& runs) {
  const auto file = dir.write(name + ".toml", "name = \"" + name + "\"\n" + runs);
  const CommandResult r = dir.run(file, {"--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::map<std::string, int> ok;
  if (r.exit_code != 0) return ok;
  for (const auto& c : dir.records()) {
    EXPECT_EQ(c["status"], "ok") << c.dump();
    EXPECT_EQ(c["wrong"], 0) << c.dump();
    if (c["status"] == "ok" && c["wrong"] == 0) ++ok[c["run"].get<std::string>()];
  }
  return ok;
}

TEST(Ucx, AllPairsOnFourRanksGivesEveryPairMatricesAndTheExecutionLog) {
  REQUIRE_PLUGINS("ucx");
  JobDir dir;
  const auto file = dir.write("pairs.toml", R"(
name = "pairs"
seed = 42
[[run]]
backend = "ucx"
world_size = 4
ops = ["all_pairs"]
sizes = { min = "1B", max = "64KiB", factor = 16 }
dtype = "uint8"
warmup = 2
iterations = 3
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 12u * 5u);  // 12 directed pairs x 5 sizes (1, 16, 256, 4Ki, 64Ki)
  std::set<std::tuple<int, int, uint64_t>> seen;
  for (const auto& c : cases) {
    EXPECT_EQ(c["status"], "ok") << c.dump();
    EXPECT_EQ(c["wrong"], 0) << c.dump();
    EXPECT_EQ(c["iterations"], 3);
    EXPECT_GT(c["time_us"]["p50"].get<double>(), 0.0);
    const int src = c["src"], dst = c["dst"];
    EXPECT_NE(src, dst);
    seen.insert({src, dst, c["bytes"].get<uint64_t>()});
    // Only the pair's two ranks have a mean.
    const auto means = c["rank_mean_us"].get<std::vector<double>>();
    ASSERT_EQ(means.size(), 4u);
    for (int k = 0; k < 4; ++k) EXPECT_EQ(means[k] > 0, k == src || k == dst) << c.dump();
    // One host, one clock: each sample runs from the sender's post to the arrival the receiver
    // saw, never shorter than the sender's own time.
    EXPECT_EQ(c["rank_aggregation"], "sender_to_arrival") << c.dump();
    EXPECT_GE(c["time_us"]["mean"].get<double>() + 1e-9, means[src]) << c.dump();
  }
  EXPECT_EQ(seen.size(), cases.size());

  const std::filesystem::path first_job = dir.job_folder();
  const auto log = lines_of(first_job / "execution_log.csv");
  ASSERT_EQ(log.size(), 1u + 60u * 3u);  // header + every configuration per repetition
  EXPECT_EQ(log[0], "run,backend,world_size,config_id,src,dst,size,repetition,timestamp_start_ns,"
                    "timestamp_end_ns,duration_ns,repeat");
  std::map<int, int> per_config;
  std::vector<int> first_rep_order;
  for (size_t i = 1; i < log.size(); ++i) {
    std::vector<std::string> f;
    std::stringstream ss(log[i]);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    ASSERT_EQ(f.size(), 12u) << log[i];
    EXPECT_EQ(f[11], "0") << "no repeats: repeat 0";
    ++per_config[std::stoi(f[3])];
    if (f[7] == "0") first_rep_order.push_back(std::stoi(f[3]));
    EXPECT_LE(std::stoll(f[8]), std::stoll(f[9])) << log[i];
    EXPECT_GT(std::stoll(f[10]), 0) << log[i];
    EXPECT_EQ(std::stoll(f[9]) - std::stoll(f[8]), std::stoll(f[10])) << "seed 003: duration = end - start: " << log[i];
  }
  EXPECT_EQ(per_config.size(), 60u);
  for (const auto& [id, n] : per_config) EXPECT_EQ(n, 3) << "config " << id;
  EXPECT_FALSE(std::is_sorted(first_rep_order.begin(), first_rep_order.end())) << "not shuffled";

  const std::string md = read_text(first_job / "summary.md");
  EXPECT_NE(md.find("### all_pairs · ucx · 4 ranks · 64 KiB (65536 B) · uint8 · 3 repetitions"),
            std::string::npos) << md;
  EXPECT_NE(md.find("Bandwidth, GB/s (rows: src, columns: dst)"), std::string::npos);
  EXPECT_NE(md.find("| **2** | "), std::string::npos);

  // Same seed, same order: the rerun's first repetition runs the configurations identically.
  const CommandResult again = dir.run(file, {"--quiet"});
  ASSERT_EQ(again.exit_code, 0) << again.output;
  std::vector<std::filesystem::path> jobs;
  for (const auto& e : std::filesystem::directory_iterator(dir.path() / "out")) jobs.push_back(e.path());
  ASSERT_EQ(jobs.size(), 2u);
  const auto other = jobs[0] == first_job ? jobs[1] : jobs[0];
  std::vector<int> rerun_order;
  const auto log2 = lines_of(other / "execution_log.csv");
  for (size_t i = 1; i < log2.size(); ++i) {
    std::vector<std::string> f;
    std::stringstream ss(log2[i]);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    if (f[7] == "0") rerun_order.push_back(std::stoi(f[3]));
  }
  EXPECT_EQ(rerun_order, first_rep_order);
}

TEST(Ucx, SideBySideWithGlooGivesAComparisonTable) {
  REQUIRE_PLUGINS("ucx", "gloo");
  JobDir dir;
  const auto file = dir.write("vs.toml", R"(
name = "vs"
[[run]]
name = "collectives"
backends = ["gloo", "ucx"]
world_size = 3
ops = ["allreduce", "pingpong"]
sizes = ["4KiB", "1MiB"]
dtype = "f32"
warmup = 1
iterations = 3
)");
  const CommandResult r = dir.run(file);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ucx/gloo"), std::string::npos) << r.output;  // console ratio column
  const std::string md = read_text(dir.job_folder() / "summary.md");
  EXPECT_NE(md.find("### Comparison · allreduce · f32 · sum · out_of_place · 3 ranks"), std::string::npos) << md;
  EXPECT_NE(md.find("ucx / gloo time"), std::string::npos) << md;
  size_t ucx_ok = 0;
  for (const auto& c : dir.records())
    if (c["backend"] == "ucx" && c["status"] == "ok" && c["wrong"] == 0) ++ucx_ok;
  EXPECT_EQ(ucx_ok, 4u);
}

TEST(Ucx, EveryForcedAlgorithmAndOptionVariantIsCorrect) {
  REQUIRE_PLUGINS("ucx");
  JobDir dir;
  std::string runs;
  const std::vector<std::pair<std::string, std::string>> variants = {
      {"ring", R"(allreduce_algorithm = "ring"
allgather_algorithm = "ring"
reducescatter_algorithm = "ring"
protocols = "v1")"},
      {"recursive", R"(allreduce_algorithm = "recursive_doubling"
allgather_algorithm = "recursive_doubling"
reducescatter_algorithm = "pairwise"
protocols = "v2"
rndv_scheme = "get")"},
      {"halving-doubling-yield", R"(allreduce_algorithm = "rabenseifner"
reducescatter_algorithm = "recursive_halving"
progress = "yield"
rndv_scheme = "put")"},
      {"ring-segmented", R"(allreduce_algorithm = "ring"
allgather_algorithm = "ring"
reducescatter_algorithm = "ring"
ring_segment = "1000B"
single_copy_segment = "64KiB")"},
      {"auto-threshold", R"(small_message_threshold = "1KiB"
ring_threshold = "100KiB")"},
      {"tcp-wait-registered", R"(transports = "tcp"
progress = "wait"
registration = "on"
rndv_thresh = "8KiB")"},
      {"peer-error-handling", R"(error_handling = "peer"
eager_endpoints_up_to = "0")"},
  };
  for (const auto& [name, options] : variants)
    runs += fmt::format(R"(
[[run]]
name = "{}"
backend = "ucx"
world_sizes = [3, 4]
ops = ["allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall", "pingpong"]
dtypes = ["f32", "bf16"]
redops = ["sum", "max"]
sizes = ["1 elements", "1000 elements", "100000 elements"]
placement = ["out_of_place", "in_place"]
root = 2
warmup = 1
iterations = 2
[run.options.ucx]
{}
)", name, options);
  const std::map<std::string, int> ok_per_run = correct_cases_per_run(dir, "variants", runs);
  ASSERT_EQ(ok_per_run.size(), variants.size());
  for (const auto& [run, n] : ok_per_run) EXPECT_GT(n, 100) << run;
  // What ran is in the execution metadata.
  const auto execs = dir.records("execution");
  bool saw_tcp = false, saw_yield = false;
  // run -> rank 0's "protocols", "rndv_scheme", "small_message_threshold"
  std::map<std::string, std::string> protocols, schemes, thresholds;
  for (const auto& e : execs) {
    saw_tcp |= e.dump().find("\"transports\":\"tcp\"") != std::string::npos;
    saw_yield |= e.dump().find("\"progress\":\"yield\"") != std::string::npos;
    protocols[e["run"]] = e["metadata"]["ranks"]["0"]["backend"].value("protocols", "(none)");
    schemes[e["run"]] = e["metadata"]["ranks"]["0"]["backend"].value("rndv_scheme", "(none)");
    thresholds[e["run"]] = e["metadata"]["ranks"]["0"]["backend"].value("small_message_threshold", "(none)");
  }
  EXPECT_TRUE(saw_tcp);
  EXPECT_TRUE(saw_yield);
  EXPECT_EQ(protocols["ring"], "v1 (protocols = \"v1\")");
  EXPECT_EQ(protocols["recursive"], "v2 (protocols = \"v2\")");
  EXPECT_NE(protocols["auto-threshold"].find("UCX"), std::string::npos) << protocols["auto-threshold"];
  EXPECT_EQ(schemes["recursive"], "get_zcopy (rndv_scheme = \"get\")");
  EXPECT_EQ(schemes["halving-doubling-yield"], "put_zcopy (rndv_scheme = \"put\")");
  EXPECT_TRUE(schemes["ring"] == "UCX's default (auto: get_zcopy for host memory)" ||
              schemes["ring"].starts_with("UCX_RNDV_SCHEME="))
      << schemes["ring"];
  EXPECT_EQ(thresholds["ring"], "unset (allreduce 65536, reducescatter 65536)");
  EXPECT_EQ(thresholds["auto-threshold"], "1024");
}

// Allreduce sends the data it wrote eagerly up to allreduce_eager_up_to (UCP fast completion:
// collectives/eager_sends.h): results must be the same with it, without it, over TCP and with
// UCX's threshold set by hand, at the sizes where it changes the protocol (8-64 KiB).
TEST(Ucx, AllreduceIsCorrectWithAndWithoutEagerSendsOfWhatItWrote) {
  REQUIRE_PLUGINS("ucx");
  if (const char* t = std::getenv("UCX_RNDV_THRESH"); t && *t)
    GTEST_SKIP() << "UCX_RNDV_THRESH=" << t << " is set: the metadata checked here assumes UCX's own threshold";
  JobDir dir;
  std::string runs;
  const std::vector<std::pair<std::string, std::string>> variants = {
      {"default", ""},
      {"off", "allreduce_eager_up_to = \"0\""},
      {"tcp", "transports = \"tcp\""},
      {"recursive", "allreduce_algorithm = \"recursive_doubling\"\nallreduce_eager_up_to = \"1MiB\""},
      {"set-threshold", "rndv_thresh = \"8KiB\""},
  };
  for (const auto& [name, options] : variants)
    runs += fmt::format(R"(
[[run]]
name = "{}"
backend = "ucx"
world_sizes = [2, 3, 4]
ops = ["allreduce"]
dtypes = ["f32", "bf16"]
redops = ["sum", "max"]
sizes = ["8KiB", "32KiB", "64KiB", "96KiB"]
placement = ["out_of_place", "in_place"]
warmup = 1
iterations = 3
[run.options.ucx]
{}
)", name, options);
  std::map<std::string, int> ok_per_run = correct_cases_per_run(dir, "eager", runs);
  // 3 worlds x 2 dtypes x 2 redops x 4 sizes x 2 placements
  for (const auto& [name, options] : variants) EXPECT_EQ(ok_per_run[name], 3 * 2 * 2 * 4 * 2) << name;
  std::map<std::string, std::string> eager;  // run -> rank 0's metadata
  for (const auto& e : dir.records("execution"))
    eager[e["run"]] = e["metadata"]["ranks"]["0"]["backend"].value("allreduce_eager_up_to", "(none)");
  EXPECT_EQ(eager["default"], "65536");
  EXPECT_EQ(eager["off"], "0");
  EXPECT_EQ(eager["recursive"], "1048576");
  EXPECT_EQ(eager["set-threshold"],
            "65536 (no protocol change: rndv_thresh decides eager or rendezvous for these sends too)");
}

// A rendezvous leaves its receiver an acknowledgement to send after the data arrived (its
// sender's send completes only then), and UCX sends it from a pending queue when the peer's
// shared-memory queue was full. A rank that went from its last op of a case straight to the
// core's bootstrap allgather never sent it, and its peer waited for that send until the
// timeout: 4 of 6 runs of the segmented ring hung with the queues made this small
// (UCX_POSIX_FIFO_SIZE; a 1 MiB scatter did in 1 of 4 runs with 2 entries), which is how a full
// queue looks with many local ranks sending to one.
// The core now meets in the backend's barrier before it waits in the bootstrap (settle_backend).
TEST(Ucx, ARankLeavingAfterARendezvousStillAcknowledgesIt) {
  REQUIRE_PLUGINS("ucx");
  JobDir dir;
  const auto file = dir.write("full-queues.toml", R"(
name = "full-queues"
[defaults]
backend = "ucx"
world_size = 4
dtype = "f32"
warmup = 1
iterations = 3
env = { UCX_POSIX_FIFO_SIZE = "4", UCX_SYSV_FIFO_SIZE = "4" }
[[run]]
name = "segmented-ring"
ops = ["allreduce", "allgather", "reducescatter"]
sizes = ["4MiB", "16MiB"]
[run.options.ucx]
allreduce_algorithm = "ring"
allgather_algorithm = "ring"
reducescatter_algorithm = "ring"
ring_segment = "256KiB"
timeout_ms = "10000"
[[run]]
name = "rooted-and-p2p"
ops = ["scatter", "gather", "alltoall", "broadcast", "pingpong", "all_pairs"]
sizes = ["1MiB"]
[run.options.ucx]
timeout_ms = "10000"
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::map<std::string, int> ok;  // by run, all_pairs apart
  for (const auto& c : dir.records()) {
    EXPECT_EQ(c["status"], "ok") << c.dump();
    EXPECT_EQ(c.value("wrong", 0), 0) << c.dump();
    if (c["status"] == "ok") ++ok[c["op"] == "all_pairs" ? "all_pairs" : c["run"].get<std::string>()];
  }
  EXPECT_EQ(ok["segmented-ring"], 6);   // 3 ops x 2 sizes
  EXPECT_EQ(ok["rooted-and-p2p"], 5);   // one size each
  EXPECT_EQ(ok["all_pairs"], 12);       // every ordered pair of 4 ranks
}

// Without priming, the first eager messages to a peer fault UCX's shared-memory receive buffers
// into both processes, inside the first small-message cases' timed loops (86-92 faults per case
// on the development VM, several µs each). With the default priming at communicator creation
// those cases take (almost) none. Page faults, not times: deterministic enough for a test. The
// primed run goes first, so that nothing about being a job's first execution favours it.
TEST(Ucx, PrimingMapsTheEagerPathBeforeTheFirstTimedCase) {
  REQUIRE_PLUGINS("ucx");
  if (const char* tls = std::getenv("UCX_TLS"); tls && *tls)
    GTEST_SKIP() << "UCX_TLS=" << tls << " is set: the test needs UCX's default shared-memory transport";
  JobDir dir;
  const auto file = dir.write("priming.toml", R"(
name = "priming"
[defaults]
backend = "ucx"
world_size = 2
dtype = "f32"
placement = "in_place"
warmup = 5
iterations = 100
ops = ["allreduce"]
sizes = [1024, 4096]
[[run]]
name = "primed"
[[run]]
name = "unprimed"
[run.options.ucx]
prime_messages = 0
[[run]]
name = "lazy"
[run.options.ucx]
eager_endpoints_up_to = 1
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::map<std::string, std::vector<int64_t>> faults;  // run -> per case, in order
  for (const auto& c : dir.records()) {
    ASSERT_EQ(c["status"], "ok") << c.dump();
    ASSERT_TRUE(c.contains("timed_page_faults")) << c.dump();
    faults[c["run"].get<std::string>()].push_back(c["timed_page_faults"].get<int64_t>());
  }
  ASSERT_EQ(faults["primed"].size(), 2u);
  ASSERT_EQ(faults["unprimed"].size(), 2u);
  // Unprimed, the first case of the execution maps the buffers its messages cycle through.
  EXPECT_GE(faults["unprimed"][0], 32) << "the lazily mapped eager path no longer shows: is the count measured?";
  const int64_t primed = faults["primed"][0] + faults["primed"][1];
  const int64_t unprimed = faults["unprimed"][0] + faults["unprimed"][1];
  EXPECT_LE(primed, 16) << "priming left " << primed << " faults in the timed loops";
  EXPECT_LT(primed * 4, unprimed);
  // Each execution's metadata says what ran.
  std::map<std::string, std::string> primed_with;
  for (const auto& e : dir.records("execution"))
    primed_with[e["run"]] = e["metadata"]["ranks"]["0"]["backend"].value("prime_messages", "(none)");
  EXPECT_EQ(primed_with["primed"], "256");
  EXPECT_EQ(primed_with["unprimed"], "0");
  // A probe: lazy endpoints prime nothing, but the metadata said 256.
  EXPECT_EQ(primed_with["lazy"].rfind("0 (endpoints connect lazily", 0), 0u) << primed_with["lazy"];
}

std::string bad_option_experiment(const std::string& option) {
  return fmt::format(R"(
name = "bad-option"
[[run]]
name = "bad"
backend = "ucx"
world_size = 2
ops = ["allreduce"]
sizes = ["1KiB"]
timeout = "60s"
[run.options.ucx]
{}
[[run]]
name = "good"
backend = "ucx"
world_size = 2
ops = ["allreduce"]
sizes = ["1KiB"]
)",
                     option);
}

// What the option descriptors (ABI 1.2) express -- keys, types, ranges, choices -- is refused by
// `run` before anything starts, at the option's line (line 11 of the file above).
TEST(Ucx, BadOptionsTheDescriptorsDescribeAreRefusedBeforeLaunch) {
  REQUIRE_PLUGINS("ucx");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"(bogus = "1")", "bad.toml:11:1: error: unknown option 'bogus' for backend 'ucx'; its options are: transports, thread_mode,"},
      {R"(progress = "spin")",
       "bad.toml:11:12: error: option progress = \"spin\" for backend 'ucx' is not valid: expected one of auto, polling, wait"},
      {R"(allreduce_algorithm = "binomial")",
       "bad.toml:11:23: error: option allreduce_algorithm = \"binomial\" for backend 'ucx' is not valid: expected one of "
       "auto, ring, recursive_doubling"},
      {R"(protocols = "v3")",
       "bad.toml:11:13: error: option protocols = \"v3\" for backend 'ucx' is not valid: expected one of auto, v1, v2"},
      {R"(rndv_scheme = "get_zcopy")",
       "bad.toml:11:15: error: option rndv_scheme = \"get_zcopy\" for backend 'ucx' is not valid: expected one of auto, "
       "get, put"},
      {R"(timeout_ms = "-5")", "bad.toml:11:14: error: option timeout_ms = \"-5\" for backend 'ucx' is not valid"},
      {R"(single_copy_segment = "lots")",
       "bad.toml:11:23: error: option single_copy_segment = \"lots\" for backend 'ucx' is not valid"},
  };
  for (const auto& [option, message] : cases) {
    JobDir dir;
    const auto file = dir.write("bad.toml", bad_option_experiment(option));
    const CommandResult r = dir.run(file, {"--quiet"});
    EXPECT_EQ(r.exit_code, 2) << option << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << option << "\n" << r.output;
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "out")) << option << ": nothing may be launched";
  }
}

// A value only the plugin can judge (a transport list, a threshold's syntax) fails its execution
// at init with the option named, quickly, and the job goes on.
TEST(Ucx, BadOptionsFailFastNamingTheOption) {
  REQUIRE_PLUGINS("ucx");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"(transports = "tcp,infiniband")", "unknown UCX transport 'infiniband'"},
      // Empty items are skipped, as UCX skips them, and the names after them still checked.
      {R"(transports = "tcp,,infiniband")", "unknown UCX transport 'infiniband'"},
      {R"(transports = "^,")", "option transports = \"^,\" is not valid"},
      {R"(rndv_thresh = "8 KB")", "option rndv_thresh = \"8 KB\" is not valid"},
  };
  for (const auto& [option, message] : cases) {
    JobDir dir;
    const auto file = dir.write("bad.toml", bad_option_experiment(option));
    const CommandResult r = dir.run(file, {"--quiet"});
    EXPECT_NE(r.exit_code, 0) << option;
    EXPECT_LT(r.seconds, 30.0) << option << ": a bad option must not wait for a timeout";
    const auto execs = dir.records("execution");
    ASSERT_EQ(execs.size(), 2u) << option;
    EXPECT_EQ(execs[0]["status"], "failed") << option;
    EXPECT_NE(execs[0]["reason"].get<std::string>().find(message), std::string::npos)
        << option << " -> " << execs[0]["reason"];
    EXPECT_EQ(execs[1]["status"], "ok") << option << ": the next run still executes";
  }
}

}  // namespace
}  // namespace commbench::testing
