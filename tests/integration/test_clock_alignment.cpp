// One timeline across hosts (issue 12 §3) and the merged trace (issue 13 §1), end to end: hosts
// are network namespaces (multihost_netns.sh) whose CLOCK_MONOTONIC is shifted by whole seconds
// with time namespaces (unshare --time, real kernel support: no hook in commbench), so the
// true offset of every rank's clock to rank 0's is known exactly.
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <algorithm>
#include <map>
#include <vector>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "job_harness.h"

namespace commbench::testing {
namespace {

constexpr int kSkewS[3] = {0, 7, -3};  // host h's monotonic clock offset


nlohmann::json load_json(const std::filesystem::path& p) { return nlohmann::json::parse(read_text(p)); }

// The "timed" span of every case on every rank: (case name, rank) -> [start, end] in us.
std::map<std::pair<std::string, int>, std::pair<double, double>> timed_spans(const nlohmann::json& trace) {
  std::map<std::pair<std::string, int>, std::pair<double, double>> spans;
  for (const auto& ev : trace["traceEvents"]) {
    if (ev.value("ph", "") != "X" || ev.value("cat", "") != "timed" || ev["args"].contains("iteration") ||
        ev["args"].contains("src"))
      continue;
    const double ts = ev["ts"], dur = ev["dur"];
    spans[{ev["name"].get<std::string>() + " exec" + std::to_string(ev["args"].value("exec", -1)),
           ev["pid"].get<int>()}] = {ts, ts + dur};
  }
  return spans;
}

TEST(ClockAlignment, SkewedHostsShareRankZerosTimelineWithinTheRoundTripBound) {
  const std::string body = R"(
[[run]]
name = "skew"
backends = ["gloo"]
world_sizes = [6]
ops = ["allreduce", "all_pairs"]
sizes = ["4KiB"]
warmup = 1
iterations = 3
trace = true
timeout = "60s"
)";
  JobDir dir;
  const auto file = dir.write("skew.toml", "name = \"skew\"\n" + body + R"([run.options.gloo]
iface = "cb0"
)");
  const std::string cmd = fmt::format(
      "CB_HOST_MONOTONIC_OFFSETS='{} {} {}' {}/tests/integration/multihost_netns.sh {} {} {} {} > {}/netns.txt 2>&1",
      kSkewS[0], kSkewS[1], kSkewS[2], COMMBENCH_SOURCE_DIR, COMMBENCH_BIN, file.string(),
      (dir.path() / "out").string(), (dir.path() / "logs").string(), dir.path().string());
  const int rc = WEXITSTATUS(std::system(cmd.c_str()));
  if (rc == 77) GTEST_SKIP() << read_text(dir.path() / "netns.txt");
  ASSERT_EQ(rc, 0) << read_text(dir.path() / "netns.txt") << read_text(dir.path() / "logs/task-0.log")
                   << read_text(dir.path() / "logs/task-3.log");

  // 1. The recorded offsets: rank r runs on host r/2, so rank 0's clock minus its is
  // -skew[r/2] seconds, and the estimate must be within its own bound (half the round trip)
  // plus the timers' calibration error (a few ppm over the seconds since calibration).
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u);
  const auto& clock = execs[0]["clock"];
  ASSERT_TRUE(clock.is_object()) << execs[0].dump();
  ASSERT_EQ(clock["ranks"].size(), 6u) << clock.dump();
  std::set<std::string> hosts;
  for (const auto& r : clock["ranks"]) {
    const int rank = r["rank"];
    hosts.insert(r["host"].get<std::string>());
    const int64_t truth = -int64_t{kSkewS[rank / 2]} * 1000000000;
    for (const char* when : {"start", "end"}) {
      ASSERT_TRUE(r.contains(when)) << r.dump();
      const int64_t est = r[when]["offset_ns"], rtt = r[when]["rtt_ns"];
      const int64_t err = std::llabs(est - truth);
      EXPECT_LE(err, rtt / 2 + 20000) << "rank " << rank << " " << when << ": " << r.dump();
      if (rank != 0) EXPECT_GT(rtt, 0) << r.dump();
      std::printf("rank %d %s: offset error %lld ns, round-trip bound +-%lld ns\n", rank, when,
                  static_cast<long long>(err), static_cast<long long>(rtt / 2));
    }
    EXPECT_LT(std::abs(r["drift_ppm"].get<double>()), 100.0) << "one physical clock: " << r.dump();
  }

  // 2. execution_log.csv on rank 0's timeline: the transfers ran one after the other (a
  // barrier before each), so each starts after the previous one ended, up to the alignment
  // error of the two receivers; on the receivers' own clocks they would jump by seconds.
  const auto log = csv_rows(dir.job_folder() / "execution_log.csv");
  ASSERT_EQ(log.size(), 1u + 30u * 3u);  // 6*5 pairs x 3 repetitions
  int64_t bound = 0;
  for (const auto& r : clock["ranks"]) bound = std::max<int64_t>(bound, r["error_bound_ns"].get<int64_t>() + 20000);
  for (size_t i = 2; i < log.size(); ++i) {
    const int64_t prev_end = std::stoll(log[i - 1][9]), start = std::stoll(log[i][8]);
    EXPECT_GE(start, prev_end - 2 * bound) << "row " << i;
  }

  // 3. trace.json: every case on every rank, and one timeline: an all_pairs transfer's receiver
  // cannot finish before its sender started, and the ranks' timed spans of a collective overlap.
  const auto trace = load_json(dir.job_folder() / "trace.json");
  EXPECT_FALSE(trace["metadata"].contains("missing")) << trace["metadata"].dump();
  const auto spans = timed_spans(trace);
  std::set<std::string> cases;
  for (const auto& [key, span] : spans) cases.insert(key.first);
  EXPECT_EQ(cases.size(), 1u) << "the allreduce case";
  for (const auto& name : cases) {
    double latest_start = -1e300, earliest_end = 1e300;
    for (int r = 0; r < 6; ++r) {
      ASSERT_TRUE(spans.count({name, r})) << name << " rank " << r;
      latest_start = std::max(latest_start, spans.at({name, r}).first);
      earliest_end = std::min(earliest_end, spans.at({name, r}).second);
    }
    // Collectives: nobody finishes the timed iterations before everybody started them.
    EXPECT_LE(latest_start, earliest_end + 2 * bound / 1e3) << name;
  }
  std::map<std::tuple<int, int, int>, std::map<int, std::pair<double, double>>> transfers;  // (src,dst,rep) -> rank -> span
  for (const auto& ev : trace["traceEvents"])
    if (ev.value("cat", "") == "timed" && ev["args"].contains("src"))
      transfers[{ev["args"]["src"], ev["args"]["dst"], ev["args"]["repetition"]}][ev["pid"]] = {
          ev["ts"].get<double>(), ev["ts"].get<double>() + ev["dur"].get<double>()};
  EXPECT_EQ(transfers.size(), 90u);
  for (const auto& [k, by_rank] : transfers) {
    const auto [src, dst, rep] = k;
    ASSERT_TRUE(by_rank.count(src) && by_rank.count(dst)) << src << "->" << dst;
    EXPECT_GE(by_rank.at(dst).second, by_rank.at(src).first - 2 * bound / 1e3) << src << "->" << dst << " rep " << rep;
  }
  int counters = 0;
  for (const auto& ev : trace["traceEvents"]) counters += ev.value("ph", "") == "C";
  EXPECT_EQ(counters, 0) << "no telemetry.csv in this job";
}

// A local run with trace = true: the per-rank files, the merged trace with every case of every
// rank, and telemetry.csv rows (written here by the test, as the agent's sampler would) as
// counter tracks on the same timeline.
TEST(Trace, LocalRunMergesEveryRanksCasesAndTelemetryCounters) {
  JobDir dir;
  const auto file = dir.write("t.toml", R"(name = "t"
[defaults]
trace = true
[[run]]
name = "a"
backends = ["gloo"]
world_sizes = [3]
ops = ["allreduce", "broadcast"]
sizes = ["1KiB", "64KiB"]
warmup = 2
iterations = 4
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto job = dir.job_folder();
  for (int rank = 0; rank < 3; ++rank)
    EXPECT_TRUE(std::filesystem::exists(job / fmt::format("trace/exec0-rank{}.json", rank)));
  auto trace = load_json(job / "trace.json");
  const auto spans = timed_spans(trace);
  std::set<std::string> cases;
  for (const auto& [key, span] : spans) cases.insert(key.first);
  EXPECT_EQ(cases.size(), 4u);
  for (const auto& c : cases)
    for (int rank = 0; rank < 3; ++rank) EXPECT_TRUE(spans.count({c, rank})) << c << " rank " << rank;
  std::map<std::string, int> iterations, phases;
  double first = 1e300, last = -1e300;
  for (const auto& ev : trace["traceEvents"]) {
    if (ev.value("ph", "") != "X") continue;
    if (ev["args"].contains("iteration")) ++iterations[ev["args"]["op"].get<std::string>()];
    ++phases[ev["args"]["phase"].get<std::string>()];
    first = std::min(first, ev["ts"].get<double>());
    last = std::max(last, ev["ts"].get<double>());
  }
  EXPECT_EQ(iterations["allreduce"], 2 * 3 * 4);  // sizes x ranks x iterations
  EXPECT_EQ(iterations["broadcast"], 2 * 3 * 4);
  for (const char* p : {"init", "rendezvous", "check", "warm-up", "timed"}) EXPECT_GT(phases[p], 0) << p;
  // The clock syncs at the start and the end belong to the execution, not to a case: the end's
  // was once named after the last case and carried its op (a probe).
  int syncs = 0;
  for (const auto& ev : trace["traceEvents"]) {
    if (ev.value("ph", "") != "X" || ev["args"].value("phase", "") != "clock sync") continue;
    ++syncs;
    EXPECT_EQ(ev["name"], "clock sync") << ev.dump();
    EXPECT_FALSE(ev["args"].contains("op")) << ev.dump();
  }
  EXPECT_EQ(syncs, 2 * 3) << "start and end, on every rank";
  // Back-to-back iterations stay back to back on every rank's row once moved to rank 0's clock:
  // moving only their starts (drift) made each overlap the next by nanoseconds (a probe).
  std::map<int, std::vector<std::pair<double, double>>> rows;  // pid -> (ts, end) of iterations
  for (const auto& ev : trace["traceEvents"])
    if (ev.value("ph", "") == "X" && ev["args"].contains("iteration"))
      rows[ev["pid"].get<int>()].emplace_back(ev["ts"].get<double>(), ev["ts"].get<double>() + ev["dur"].get<double>());
  for (auto& [pid, spans] : rows) {
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i)
      EXPECT_GE(spans[i].first, spans[i - 1].second - 0.0015) << "rank " << pid << " iteration " << i;
  }

  // The agent's telemetry (another part of commbench writes it): rows at the job's time, on
  // this host, become counters placed within the job's span of the trace.
  const auto exec = dir.records("execution").at(0);
  const auto& r0 = exec["clock"]["ranks"][0];
  const std::string host = r0["host"];
  const int64_t umt = r0["start"]["unix_minus_timer_ns"];
  const int64_t mid_ns = static_cast<int64_t>((first + last) / 2 * 1e3);
  {
    std::ofstream csv(job / "telemetry.csv");
    csv << "time_unix_ns,host,source,name,value,unit\n";
    csv << mid_ns + umt << "," << host << ",cpufreq,cpu0,2400,MHz\n";
    csv << mid_ns + umt + 1000 << "," << host << ",hwmon,temp1,51.5,C\n";
    csv << mid_ns + umt << ",elsewhere,hwmon,temp1,40,C\n";
  }
  // Merge again through the CLI-free path: rerun the merge the way the agent does at job end.
  const CommandResult again = run_shell(fmt::format("{} merge-trace {}", COMMBENCH_BIN, shell_quote(job.string())));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  trace = load_json(job / "trace.json");
  int counters = 0;
  for (const auto& ev : trace["traceEvents"]) {
    if (ev.value("ph", "") != "C") continue;
    ++counters;
    EXPECT_NEAR(ev["ts"].get<double>(), mid_ns / 1e3, 2.0) << ev.dump();
  }
  EXPECT_EQ(counters, 2);
  EXPECT_EQ(trace["metadata"]["telemetry_unaligned_hosts"], nlohmann::json::array({"elsewhere"}));
}

}  // namespace
}  // namespace commbench::testing
