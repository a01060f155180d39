// The words and numbers a person acts on (issue 27 §2, §3): ratios and bandwidths with
// significant digits, message rates shown, cases that never ran counted, the exit code said once
// and truly, and a busy or oversubscribed machine said on the console, in summary.json and in
// summary.md — checked against records whose numbers are known.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "observe/host_load.h"
#include "report/console_reporter.h"
#include "report/format.h"
#include "report/markdown_reporter.h"
#include "report/summary_json_reporter.h"
#include "test_report_helpers.h"

namespace commbench {
namespace {

using test::contains;
using test::make_case;
using test::make_exec;

class VerdictCapture {
 public:
  VerdictCapture() : f_(std::tmpfile()) {}
  ~VerdictCapture() { std::fclose(f_); }
  std::FILE* get() const { return f_; }
  std::string text() const {
    std::fflush(f_);
    std::string out;
    std::rewind(f_);
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f_)) > 0;) out.append(buf, n);
    return out;
  }

 private:
  std::FILE* f_;
};

TEST(VerdictText, NumbersKeepTheirSignificantDigits) {
  EXPECT_EQ(format_gbps(0.0059123), "0.00591");  // was "0.01"... or "0.00" below 64 KiB
  EXPECT_EQ(format_gbps(0.00004567), "0.0000457");
  EXPECT_EQ(format_gbps(12.345), "12.35");       // nccl-tests' two decimals where they suffice
  EXPECT_EQ(format_gbps(0), "0.00");
  EXPECT_EQ(format_ratio(0.001), "0.00100");     // was "0.00"
  EXPECT_EQ(format_ratio(1000), "1000");
  EXPECT_EQ(format_ratio(2.5), "2.50");
  EXPECT_EQ(format_msg_rate(1.234), "1.23 M");
  EXPECT_EQ(format_msg_rate(0.000456), "456");
  EXPECT_EQ(format_msg_rate(0.0456), "45.6 k");
  // Scaling efficiencies: "{:.3g}" wrote 31.7 as "3.17e+03".
  EXPECT_EQ(format_percent(31.7), "3170");
  EXPECT_EQ(format_percent(10.4), "1040");
  EXPECT_EQ(format_percent(0.651), "65.1");
  EXPECT_EQ(format_percent(0.0875), "8.75");
}

TEST(VerdictText, ComparisonRatiosOfAThousandfoldGap) {
  VerdictCapture out, progress;
  ConsoleReporter console(out.get(), progress.get(), ProgressMode::Never);
  RunSpec run;
  run.name = "gap";
  run.backends = {"fast", "slow"};
  console.run_done(run, {make_case("fast", "allreduce", 8, 10), make_case("slow", "allreduce", 8, 10000)});
  EXPECT_TRUE(contains(out.text(), "1000x")) << out.text();
  VerdictCapture out2;
  ConsoleReporter console2(out2.get(), progress.get(), ProgressMode::Never);
  run.backends = {"slow", "fast"};
  console2.run_done(run, {make_case("slow", "allreduce", 8, 10000), make_case("fast", "allreduce", 8, 10)});
  EXPECT_TRUE(contains(out2.text(), "0.00100x")) << out2.text();
  EXPECT_FALSE(contains(out2.text(), "0.00x")) << out2.text();
}

TEST(VerdictText, SmallBusbwAndMessageRatesAreShown) {
  VerdictCapture out, progress;
  ConsoleReporter console(out.get(), progress.get(), ProgressMode::Never);
  console.execution_started(make_exec("gloo", 0, 1, 1, 2));
  CaseRecord r = make_case("gloo", "msg_rate", 8, 4.0, 2);
  r.busbw_gbps = 0.002;  // 8 B every 4 µs
  r.msg_rate_mps = 0.25;
  console.case_done(r);
  EXPECT_TRUE(contains(out.text(), "msg/s")) << out.text();
  EXPECT_TRUE(contains(out.text(), "0.00200")) << out.text();
  EXPECT_TRUE(contains(out.text(), "250 k")) << out.text();
}

JobResult verdict_partly_failed() {
  JobResult result;
  result.cases = {make_case("gloo", "allreduce", 4096, 10), make_case("gloo", "allreduce", 8192, 10),
                  make_case("gloo", "allreduce", 16384, 10)};
  result.executions.resize(1);
  result.executions[0].info = make_exec("gloo", 0, 1, 9);
  result.executions[0].status = "failed";
  result.executions[0].cases_done = 3;
  result.exit_code = 1;
  return result;
}

TEST(VerdictText, CasesOfAnExecutionThatEndedEarlyAreCountedAsNotRun) {
  VerdictCapture out, progress;
  ConsoleReporter console(out.get(), progress.get(), ProgressMode::Never);
  console.job_done(verdict_partly_failed());
  const std::string text = out.text();
  EXPECT_TRUE(contains(text, "9 cases (3 ok, 0 unsupported, 0 failed, 6 not run (their execution ended early))")) << text;
  EXPECT_TRUE(contains(text, "Exit code 1: 1 execution failed; 6 cases not run")) << text;
}

// A probe: all_pairs tables were headed "per_iteration (... slowest rank per iteration)" while
// their records say sender_to_arrival (docs/metrics.md): the header says what the sample is.
TEST(VerdictText, AllPairsTablesNameTheirOwnSample) {
  CaseRecord r = make_case("ucx", "all_pairs", 4096, 3);
  r.method = "per_iteration";
  r.src = 0;
  r.dst = 1;
  r.rank_aggregation = "sender_to_arrival";
  EXPECT_TRUE(contains(method_label(r), "from the sender's post to the receiver seeing the message")) << method_label(r);
  EXPECT_FALSE(contains(method_label(r), "slowest rank")) << method_label(r);
  r.rank_aggregation = "slowest_per_iteration";  // a pair across clocks
  EXPECT_TRUE(contains(method_label(r), "the longer of the two ranks' own times")) << method_label(r);
}

// A probe: an execution skipped before it started (mpirun gave 3 tasks, the run wanted 4) was
// counted as "4 not run (their execution ended early)".
TEST(VerdictText, CasesOfASkippedExecutionAreSaidToBeSkippedNotEndedEarly) {
  JobResult result = verdict_partly_failed();
  result.executions.resize(2);
  result.executions[1].info = make_exec("gloo", 1, 2, 4);
  result.executions[1].status = "skipped";
  result.executions[1].cases_done = 0;
  VerdictCapture out, progress;
  ConsoleReporter console(out.get(), progress.get(), ProgressMode::Never);
  console.job_done(result);
  const std::string text = out.text();
  EXPECT_TRUE(contains(text, "6 not run (their execution ended early), 4 not run (their execution was skipped)"))
      << text;
  EXPECT_TRUE(contains(text, "4 cases not run (their execution was skipped)")) << text;
  // A backend that became unavailable after a case was said to be "skipped" (a probe).
  result.executions[1].status = "unavailable";
  result.executions[1].cases_done = 1;
  VerdictCapture out2, progress2;
  ConsoleReporter again(out2.get(), progress2.get(), ProgressMode::Never);
  again.job_done(result);
  EXPECT_TRUE(contains(out2.text(), "3 not run (their backend was unavailable)")) << out2.text();
}

TEST(VerdictText, NoExitCodeIsClaimedBeforeTheExpectationsAreChecked) {
  VerdictCapture out, progress;
  ConsoleReporter console(out.get(), progress.get(), ProgressMode::Never);
  JobResult result;
  result.cases = {make_case("gloo", "allreduce", 4096, 10)};
  result.executions.resize(1);
  result.executions[0].info = make_exec("gloo", 0, 1, 1);
  result.expectations_follow = true;
  console.job_done(result);
  EXPECT_FALSE(contains(out.text(), "Exit code")) << out.text();
  EXPECT_TRUE(contains(out.text(), "# Measurements: every execution completed and every check passed; the "
                                   "expectations below decide the exit code")) << out.text();
  const std::string md = render_markdown_summary(JobInfo{}, result, {});
  EXPECT_TRUE(contains(md, "can turn 0 into 1")) << md;
}

HostLoad verdict_busy_host() {
  HostLoad h;
  h.sampled = true;
  h.cpus = 2;
  h.load1 = 6.5;
  h.load5 = 5;
  h.load15 = 3;
  h.runnable_others = 5;
  h.ranks_here = 4;
  return h;
}

TEST(VerdictText, ABusyMachineIsSaidEverywhere) {
  const HostLoad h = verdict_busy_host();
  EXPECT_TRUE(h.busy());
  EXPECT_TRUE(h.oversubscribed());
  const std::string line = "oversubscribed machine: 4 ranks + 5 other runnable tasks on 2 CPUs (load average 6.5)";
  VerdictCapture out, progress;
  ConsoleReporter console(out.get(), progress.get(), ProgressMode::Never);
  ExecutionInfo info = make_exec("gloo", 0, 2, 1);
  info.host_load = h;
  console.execution_started(info);
  EXPECT_TRUE(contains(out.text(), "# WARNING: " + line)) << out.text();

  JobResult result;
  result.executions.resize(2);
  result.executions[0].info = info;
  result.executions[1].info = make_exec("gloo", 1, 2, 1, 1);
  result.executions[1].info.host_load = HostLoad{true, 2, 0.1, 0.1, 0.1, 0, 1};
  console.job_done(result);
  EXPECT_TRUE(contains(out.text(), "# WARNING: 1 of 2 executions started on a busy or oversubscribed machine"))
      << out.text();

  const auto json = make_summary_json(JobInfo{}, result);
  ASSERT_EQ(json["warnings"].size(), 1u) << json.dump(2);
  EXPECT_EQ(json["warnings"][0]["kind"], "oversubscribed");
  EXPECT_EQ(json["warnings"][0]["host_load"]["runnable_others"], 5);
  EXPECT_NE(json["warnings"][0]["message"].get<std::string>().find(line), std::string::npos);
  EXPECT_EQ(json["executions"][1]["host_load"]["busy"], false) << "recorded for every execution";
  const std::string md = render_markdown_summary(JobInfo{}, result, {});
  EXPECT_TRUE(contains(md, "## ⚠ Busy machine")) << md;
  EXPECT_TRUE(contains(md, line)) << md;
}

TEST(VerdictText, AQuietMachineGetsNoWarning) {
  HostLoad h{true, 4, 0.5, 0.5, 0.5, 1, 2};
  EXPECT_FALSE(h.busy());
  EXPECT_FALSE(host_load_warning(h).has_value());
  EXPECT_FALSE(host_load_warning(HostLoad{}).has_value()) << "not sampled: nothing claimed";
}

TEST(VerdictText, HostLoadIsReadFromProc) {
  const auto dir = std::filesystem::temp_directory_path() / "commbench-fake-proc";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "loadavg") << "7.50 6.00 4.25 9/800 12345\n";
  std::ofstream(dir / "stat") << "cpu  1 2 3 4\nprocs_running 1001\nprocs_blocked 0\n";
  ::setenv("COMMBENCH_PROC_ROOT", dir.c_str(), 1);
  const HostLoad h = sample_host_load(3);
  ::unsetenv("COMMBENCH_PROC_ROOT");
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(h.sampled);
  EXPECT_DOUBLE_EQ(h.load1, 7.5);
  EXPECT_DOUBLE_EQ(h.load15, 4.25);
  EXPECT_EQ(h.runnable_others, 1000);  // this agent, the reader, is not "other"
  EXPECT_EQ(h.ranks_here, 3);
  EXPECT_GE(h.cpus, 1);
  EXPECT_TRUE(h.busy());
}

}  // namespace
}  // namespace commbench
