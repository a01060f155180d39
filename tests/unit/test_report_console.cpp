#include <gtest/gtest.h>

#include <cstdio>

#include "report/console_reporter.h"
#include "report/multi_reporter.h"
#include "test_report_helpers.h"

namespace commbench {
namespace {

using test::make_case;
using test::make_exec;
using test::make_unsupported;

// A FILE* whose contents the test can read back.
class CapturedFile {
 public:
  CapturedFile() : f_(std::tmpfile()) {}
  ~CapturedFile() { std::fclose(f_); }
  std::FILE* get() const { return f_; }
  std::string text() const {
    std::fflush(f_);
    std::string out;
    std::rewind(f_);
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f_)) > 0;) out.append(buf, n);
    std::fseek(f_, 0, SEEK_END);
    return out;
  }

 private:
  std::FILE* f_;
};

using test::contains;

TEST(ReportConsole, TableColumnsRowsAndFailures) {
  CapturedFile out, progress;
  ConsoleReporter console(out.get(), progress.get(), ProgressMode::Never);
  JobInfo job;
  job.output_dir = "results/exp-20250101-000000";
  console.job_started(job);
  console.execution_started(make_exec("gloo", 0, 2, 3));
  CaseRecord noisy = make_case("gloo", "allreduce", 1 << 20, 812.5);
  noisy.time_us.cv = 0.123;
  console.case_done(make_case("gloo", "allreduce", 4096, 12.5));
  const std::string after_first = out.text();
  EXPECT_TRUE(contains(after_first, "12.50")) << "a row is printed as soon as its case is done";
  console.case_done(noisy);
  console.case_done(make_unsupported("gloo", 64, "f16 prod not supported by gloo"));
  ExecutionOutcome failed;
  failed.info = make_exec("gloo", 1, 2, 3);
  failed.status = "failed";
  failed.reason = "worker exceeded the run timeout (60 s)";
  failed.failed_rank = 3;
  console.execution_done(failed);

  const std::string text = out.text();
  for (const char* column : {"size(B)", "count", "type", "redop", "place", "time(us)",
                             "algbw(GB/s)", "busbw(GB/s)", "#wrong", "p50(us)", "p99(us)", "CV%"})
    EXPECT_TRUE(contains(text, column)) << column << "\n" << text;
  EXPECT_TRUE(contains(text, "run 'sweep' | backend gloo | 4 ranks")) << text;
  // The header names the method, the rank aggregation and the clock.
  EXPECT_TRUE(contains(text, "# memory host | method batch (N iterations back to back; per rank elapsed/N, "
                             "ranks: avg; p50/p99 over consecutive completions) | clock host")) << text;
  EXPECT_TRUE(contains(text, "unsupported: f16 prod not supported by gloo")) << text;
  EXPECT_TRUE(contains(text, "12.3 !")) << "noisy CV is flagged\n" << text;
  EXPECT_TRUE(contains(text,
                       "# FAILED: run 'sweep', backend gloo, 4 ranks: worker exceeded the "
                       "run timeout (60 s) (rank 3)"))
      << text;
  EXPECT_TRUE(progress.text().empty());
}

TEST(ReportConsole, RowsLineUpWithTheHeader) {
  CapturedFile out, progress;
  ConsoleReporter console(out.get(), progress.get(), ProgressMode::Never);
  console.execution_started(make_exec("gloo", 0, 1, 2));
  console.case_done(make_case("gloo", "allreduce", 4096, 12.5));
  console.case_done(make_case("gloo", "allreduce", 1 << 20, 812.5));
  std::vector<std::string> lines;
  std::string text = out.text(), line;
  for (char c : text) {
    if (c == '\n') {
      lines.push_back(line);
      line.clear();
    } else
      line += c;
  }
  const std::string& header = lines[lines.size() - 3];
  ASSERT_EQ(header.rfind("#", 0), 0u) << header;
  // The right edge of "time(us)" in the header is the right edge of the time in each row.
  const size_t time_end = header.find("time(us)") + std::string("time(us)").size();
  EXPECT_EQ(lines[lines.size() - 2].substr(time_end - 5, 5), "12.50");
  EXPECT_EQ(lines.back().substr(time_end - 6, 6), "812.50");
  EXPECT_EQ(lines[lines.size() - 2].size(), lines.back().size());
}

TEST(ReportConsole, NumbersWiderThanTheirColumnStaySeparated) {
  // An allgather of 2^63 - 8 bytes (skipped: it cannot fit) printed "92233720368547758001152921504606846975".
  CapturedFile out, progress;
  ConsoleReporter console(out.get(), progress.get(), ProgressMode::Never);
  console.execution_started(make_exec("gloo", 0, 1, 2));
  CaseRecord huge = make_case("gloo", "allgather", 4096, 12.5);
  huge.bytes = 9223372036854775800ULL;
  huge.count = 1152921504606846975ULL;
  console.case_done(huge);
  EXPECT_TRUE(contains(out.text(), " 9223372036854775800 1152921504606846975 ")) << out.text();
  // A probe on a loaded host: "167744.580.00000007150.0000000954" — a 6-digit time ran into two
  // bandwidths of 11 significant characters. Every field is its own word now.
  CaseRecord slow = make_case("gloo", "allreduce", 12, 167744.58);
  slow.algbw_gbps = 0.0000000715;
  slow.busbw_gbps = 0.0000000954;
  slow.time_us.p50 = 88680.55;
  slow.time_us.p99 = 3693870.42;
  console.case_done(slow);
  const std::string text = out.text();
  const std::string row = text.substr(text.rfind("allreduce"));
  EXPECT_TRUE(contains(row, " 167744.58 0.0000000715 0.0000000954 ")) << row;
  EXPECT_TRUE(contains(row, " 88680.55 3693870.42 ")) << row;
}

TEST(ReportConsole, ComparisonAndFinalSummary) {
  CapturedFile out, progress;
  ConsoleReporter console(out.get(), progress.get(), ProgressMode::Never);
  JobInfo job;
  job.output_dir = "results/cmp-20250101-000000";
  console.job_started(job);
  RunSpec run;
  run.name = "sweep";
  run.backends = {"gloo", "mpi"};
  std::vector<CaseRecord> records{make_case("gloo", "allreduce", 4096, 10), make_case("mpi", "allreduce", 4096, 25),
                                  make_case("gloo", "allreduce", 65536, 40), make_case("mpi", "allreduce", 65536, 60),
                                  make_case("gloo", "allreduce", 1 << 20, 500)};
  records[3].time_us.cv = 0.2;  // a noisy mean: its ratio is marked
  console.run_done(run, records);
  JobResult result;
  result.cases = records;
  result.cases[1].wrong = 3;
  result.executions.resize(2);
  result.executions[1].status = "failed";
  result.exit_code = 1;
  console.job_done(result);

  const std::string text = out.text();
  EXPECT_TRUE(contains(text, "Comparison for run 'sweep'")) << text;
  EXPECT_TRUE(contains(text, "gloo time")) << text;
  EXPECT_TRUE(contains(text, "mpi busbw")) << text;
  EXPECT_TRUE(contains(text, "mpi/gloo")) << text;
  EXPECT_TRUE(contains(text, " 2.50x ") || contains(text, " 2.50x\n")) << text;
  EXPECT_TRUE(contains(text, " 1.50x!")) << "a ratio of a noisy mean is marked\n" << text;
  // mpi has no record at 1 MiB (its execution ended before): said, not a bare "-".
  EXPECT_TRUE(contains(text, "not run")) << text;
  EXPECT_TRUE(contains(text, "2 executions (1 ok, 1 not ok)")) << text;
  EXPECT_TRUE(contains(text, "#wrong 3")) << text;
  EXPECT_TRUE(contains(text, "Results in: results/cmp-20250101-000000")) << text;
  EXPECT_TRUE(contains(text, "Exit code 1: 1 execution failed; 3 mismatched elements")) << text;
}

// A memory workload's batch that did not fit is a record, not a case: the summary line once read
// "0 failed" beside "Exit code 1".
TEST(ReportConsole, SummaryLineCountsFailedRecordsOfOtherKinds) {
  CapturedFile out, progress;
  ConsoleReporter console(out.get(), progress.get(), ProgressMode::Never);
  JobResult result;
  result.executions.resize(1);
  result.records.push_back(KindRecord{"memory", {{"status", "failed"}}});
  result.records.push_back(KindRecord{"memory", {{"status", "ok"}}});
  result.exit_code = 1;
  console.job_done(result);
  const std::string text = out.text();
  EXPECT_TRUE(contains(text, "| 1 memory record failed | #wrong 0")) << text;
  EXPECT_TRUE(contains(text, "Exit code 1: 1 memory record failed")) << text;
}

TEST(ReportConsole, NoComparisonForASingleBackend) {
  CapturedFile out, progress;
  ConsoleReporter console(out.get(), progress.get(), ProgressMode::Never);
  RunSpec run;
  run.backends = {"gloo"};
  console.run_done(run, {make_case("gloo", "allreduce", 4096, 10)});
  EXPECT_FALSE(contains(out.text(), "Comparison")) << out.text();
}

TEST(ReportConsole, ProgressOnlyWhenEnabledAndClearedBeforeRows) {
  CapturedFile out, progress;
  ConsoleReporter console(out.get(), progress.get(), ProgressMode::Always);
  console.execution_started(make_exec("gloo", 1, 6, 20));
  console.case_done(make_case("gloo", "allreduce", 1 << 20, 10));
  const std::string p = progress.text();
  EXPECT_TRUE(contains(p, "\r")) << p;
  EXPECT_TRUE(contains(p, "[exec 2/6] gloo allreduce 1 MiB f32 — case 1/20")) << p;
  // 1 of 6 executions and 1 of 20 cases done: an elapsed time and an estimate of what is left.
  EXPECT_TRUE(contains(p, " s elapsed, ~")) << p;
  EXPECT_TRUE(contains(p, " s left")) << p;
  EXPECT_FALSE(contains(out.text(), "[exec 2/6] gloo allreduce")) << "progress stays off stdout";

  // Auto on a regular file (not a terminal) means no progress at all.
  CapturedFile out2, progress2;
  ConsoleReporter quiet(out2.get(), progress2.get(), ProgressMode::Auto);
  quiet.execution_started(make_exec("gloo", 0, 1, 1));
  quiet.case_done(make_case("gloo", "allreduce", 4096, 10));
  EXPECT_TRUE(progress2.text().empty());
  EXPECT_FALSE(out2.text().empty());
}

// Counts events, and throws on case_done when asked: checks MultiReporter's fan-out.
class CountingReporter : public Reporter {
 public:
  explicit CountingReporter(int* cases, bool fail) : cases_(cases), fail_(fail) {}
  void case_done(const CaseRecord&) override {
    ++*cases_;
    if (fail_) throw std::runtime_error("disk full");
  }

 private:
  int* cases_;
  bool fail_;
};

TEST(ReportMulti, OneFailingReporterDoesNotStarveTheOthers) {
  int first = 0, second = 0;
  MultiReporter multi;
  multi.add(std::make_unique<CountingReporter>(&first, true));
  multi.add(std::make_unique<CountingReporter>(&second, false));
  EXPECT_EQ(multi.size(), 2u);
  EXPECT_THROW(multi.case_done(make_case("gloo", "allreduce", 64, 1)), std::runtime_error);
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 1);
}

}  // namespace
}  // namespace commbench

namespace commbench {
namespace {

// Staged cuda memory is said in the table header; results of the simulated GPU are marked as not
// GPU performance after the execution's own outcome line (which must still be printed).
TEST(ReportConsole, StagingAndTheSimulatedGpuAreSaid) {
  CapturedFile out, progress;
  ConsoleReporter console(out.get(), progress.get(), ProgressMode::Never);
  console.job_started(JobInfo{});
  console.execution_started(make_exec("gloo", 0, 1, 1));
  CaseRecord staged = make_case("gloo", "allreduce", 4096, 12.5);
  staged.memory = "cuda";
  staged.staging = "host_pinned";
  console.case_done(staged);
  ExecutionOutcome failed;
  failed.info = make_exec("gloo", 0, 1, 1);
  failed.status = "failed";
  failed.reason = "boom";
  failed.metadata = {{"ranks", {{"0", {{"gpu", {{"cuda", {{"name", "commbench simulated GPU (not a real device)"}}}}}}}}}};
  console.execution_done(failed);
  const std::string text = out.text();
  EXPECT_TRUE(contains(text, "# memory cuda (staged through host_pinned buffers, copies timed) | method batch")) << text;
  EXPECT_TRUE(contains(text, "# FAILED: run 'sweep', backend gloo")) << text;
  EXPECT_TRUE(contains(text, "# GPU: commbench simulated GPU (not a real device): these times are not GPU performance")) << text;
}

}  // namespace
}  // namespace commbench

namespace commbench {
namespace {

TEST(ReportConsole, HeaderNamesMethodAggregationAndNcclTestsSize) {
  CapturedFile out, progress;
  ConsoleReporter console(out.get(), progress.get(), ProgressMode::Never);
  console.job_started(JobInfo{});
  console.execution_started(make_exec("gloo", 0, 4, 2));
  CaseRecord per_iteration = make_case("gloo", "allreduce", 4096, 12.5);
  per_iteration.method = "per_iteration";
  per_iteration.rank_aggregation = "slowest_per_iteration";
  console.case_done(per_iteration);
  CaseRecord gather = make_case("gloo", "allgather", 4096, 20.0);
  gather.rank_aggregation = "max";
  console.case_done(gather);
  const std::string text = out.text();
  EXPECT_TRUE(contains(text, "| method per_iteration (synchronised start of each iteration; slowest rank per "
                             "iteration) | clock host")) << text;
  EXPECT_TRUE(contains(text, "ranks: max;")) << text;
  // allgather: the size column is per rank; nccl-tests prints 4 x that.
  EXPECT_TRUE(contains(text, "# size(B) = per-rank size; nccl-tests prints 4 x that (total_bytes in the records)"))
      << text;
}

}  // namespace
}  // namespace commbench
