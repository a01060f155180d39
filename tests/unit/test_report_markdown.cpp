#include <gtest/gtest.h>

#include "report/comparison.h"
#include "report/repeat_choice.h"
#include "report/format.h"
#include "report/markdown_reporter.h"
#include "report/markdown_table.h"
#include "test_report_helpers.h"

namespace commbench {
namespace {

using test::make_case;
using test::make_exec;

using test::contains;

TEST(ReportFormat, HumanSizesUseBinaryUnits) {
  EXPECT_EQ(human_size(0), "0 B");
  EXPECT_EQ(human_size(1023), "1023 B");
  EXPECT_EQ(human_size(4096), "4 KiB");
  EXPECT_EQ(human_size(1 << 20), "1 MiB");
  EXPECT_EQ(human_size(10'000'000), "9.54 MiB");
  EXPECT_EQ(human_size(uint64_t{1} << 30), "1 GiB");
}

// "every check passed" only when the results were checked: check = false once said it too.
TEST(ReportFormat, ExitReasonSaysWhenResultsWereNotChecked) {
  JobResult r;
  CaseRecord checked, unchecked;
  checked.status = unchecked.status = "ok";
  checked.wrong = 0;
  unchecked.wrong = -1;
  r.cases = {unchecked, unchecked};
  EXPECT_EQ(exit_reason(r), "every execution completed and results not checked (check = false)");
  r.cases = {checked, unchecked};
  EXPECT_EQ(exit_reason(r), "every execution completed and every check passed (1 of 2 measured cases checked)");
  r.cases = {checked, checked};
  EXPECT_EQ(exit_reason(r), "every execution completed and every check passed");
  CaseRecord step = unchecked;  // a workload step has no check of its own
  step.workload = {{"step_ms", 1.0}};
  r.cases = {checked, step};
  EXPECT_EQ(exit_reason(r), "every execution completed and every check passed");
  r.cases = {step};  // a workload-only job: nothing to claim about checks
  EXPECT_EQ(exit_reason(r), "every execution completed");
  // Beside other notes the checks are one more note (a probe: they were dropped).
  ExecutionOutcome unavailable;
  unavailable.status = "unavailable";
  r.executions = {unavailable};
  r.cases = {checked, unchecked};
  EXPECT_EQ(exit_reason(r),
            "success, with notes: 1 backend unavailable; every check passed (1 of 2 measured cases checked)");
}

// A memory workload whose batch did not fit exits 1: the line once said "see the messages above".
TEST(ReportFormat, ExitReasonCountsFailedRecordsOfOtherKinds) {
  JobResult r;
  r.exit_code = 1;
  r.records.push_back(KindRecord{"memory", {{"status", "failed"}, {"reason", "out of host memory"}}});
  r.records.push_back(KindRecord{"memory", {{"status", "ok"}}});
  EXPECT_EQ(exit_reason(r), "1 memory record failed");
}

TEST(ReportFormat, ExitReasonNamesEachCause) {
  JobResult r;
  EXPECT_EQ(exit_reason(r), "every execution completed");
  r.exit_code = 1;
  ExecutionOutcome failed;
  failed.status = "failed";
  r.executions = {failed, failed};
  CaseRecord wrong = make_case("gloo", "allreduce", 64, 1);
  wrong.wrong = 12;
  r.cases = {wrong};
  EXPECT_EQ(exit_reason(r), "2 executions failed; 12 mismatched elements (#wrong)");
}

TEST(ReportComparison, AlignsBackendsPerSizeAndComputesRatios) {
  const std::vector<CaseRecord> records{
      make_case("gloo", "allreduce", 1 << 20, 100), make_case("gloo", "allreduce", 4096, 10),
      make_case("mpi", "allreduce", 4096, 5), make_case("mpi", "allreduce", 1 << 20, 150)};
  const auto set = compare_backends({"gloo", "mpi"}, records);
  ASSERT_EQ(set.backends, (std::vector<std::string>{"gloo", "mpi"}));
  ASSERT_EQ(set.tables.size(), 1u);
  const auto& rows = set.tables[0].rows;
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].bytes, 4096u);  // ascending size
  EXPECT_EQ(rows[0].by_backend[1]->backend, "mpi");
  EXPECT_NEAR(*time_ratio(rows[0], 1), 0.5, 1e-12);
  EXPECT_NEAR(*time_ratio(rows[1], 1), 1.5, 1e-12);
}

TEST(ReportComparison, RepeatsShowEachBackendsMedianRepeatAndSaySo) {
  // The tables once showed repeat 0 only, unlabelled (gloo 1817.81 us against ucx 58.56 us,
  // while repeat 1 was 993.11 against 67.3). Three repeats: the median one, by mean time.
  std::vector<CaseRecord> records;
  for (double t : {30.0, 10.0, 20.0}) records.push_back(make_case("gloo", "allreduce", 4096, t));
  for (double t : {5.0, 7.0, 6.0}) records.push_back(make_case("ucx", "allreduce", 4096, t));
  records[1].status = "failed";  // a failed repeat is not the median of the measured ones
  for (int i = 0; i < 6; ++i) records[static_cast<size_t>(i)].repeat = i % 3;
  const auto set = compare_backends({"gloo", "ucx"}, records);
  EXPECT_EQ(set.max_repeats, 3);
  ASSERT_EQ(set.tables.size(), 1u);
  ASSERT_EQ(set.tables[0].rows.size(), 1u);
  const auto& row = set.tables[0].rows[0];
  EXPECT_DOUBLE_EQ(row.by_backend[0]->time_us.mean, 20.0);  // of 30 and 20 measured: the lower middle
  EXPECT_DOUBLE_EQ(row.by_backend[1]->time_us.mean, 6.0);
  EXPECT_NEAR(*time_ratio(row, 1), 0.3, 1e-12);
  EXPECT_EQ(repeats_note(set), "; with 3 repeats, each backend's median repeat (by mean time)");
  EXPECT_EQ(repeats_note(compare_backends({"gloo"}, {make_case("gloo", "allreduce", 4096, 1)})), "");
}

TEST(ReportComparison, WorkloadStepsWithAnotherOverlapOrBatchGetTheirOwnTable) {
  // overlap = [true, false] on gloo and ucx: the table once set gloo's overlap-off step (the
  // faster) beside ucx's overlap-on step, and called the pair "2 repeats".
  std::vector<CaseRecord> records;
  for (const char* backend : {"gloo", "ucx"})
    for (const bool overlap : {true, false}) {
      CaseRecord r = make_case(backend, "data_parallel", 1 << 20, overlap ? 30.0 : 20.0);
      if (std::string(backend) == "ucx") r.time_us.mean += 100;
      r.workload = {{"model", "tiny"}, {"sharding", "ddp"}, {"overlap", overlap}, {"batch_size", 6}};
      records.push_back(r);
    }
  const auto set = compare_backends({"gloo", "ucx"}, records);
  EXPECT_EQ(set.max_repeats, 1);
  ASSERT_EQ(set.tables.size(), 2u);
  for (const auto& t : set.tables) {
    ASSERT_EQ(t.rows.size(), 1u);
    const bool on = t.variant == "tiny ddp, overlap on, batch 6/rank";
    EXPECT_TRUE(on || t.variant == "tiny ddp, overlap off, batch 6/rank") << t.variant;
    for (const CaseRecord* r : t.rows[0].by_backend) EXPECT_EQ(r->workload["overlap"], on) << r->backend;
  }
}

TEST(ReportComparison, ARootedOpNamesItsRootAndOtherOpsNoVariant) {
  CaseRecord bcast = make_case("gloo", "broadcast", 4096, 10);
  bcast.root = 2;
  EXPECT_EQ(case_variant(bcast), "root 2");
  EXPECT_EQ(case_variant(make_case("gloo", "allreduce", 4096, 10)), "");
}

TEST(ReportComparison, MissingBackendHasNoRatio) {
  const std::vector<CaseRecord> records{make_case("gloo", "allreduce", 4096, 10)};
  const auto set = compare_backends({"gloo", "nccl"}, records);
  ASSERT_EQ(set.tables.size(), 1u);
  EXPECT_EQ(set.tables[0].rows[0].by_backend[1], nullptr);
  EXPECT_FALSE(time_ratio(set.tables[0].rows[0], 1).has_value());
}

class ReportMarkdown : public ::testing::Test {
 protected:
  void SetUp() override {
    job.experiment = "gloo-vs-mpi";
    job.file = "cmp.toml";
    job.output_dir = "results/gloo-vs-mpi-20250101-000000";
    job.plugins = {{"gloo", {{"version", "0.3"}}}, {"mpi", {{"version", "4.1"}}}};
    result.cases = {make_case("gloo", "allreduce", 1 << 20, 100),
                    make_case("mpi", "allreduce", 1 << 20, 150)};
    ExecutionOutcome ok_gloo, failed;
    ok_gloo.info = make_exec("gloo", 0, 3, 1);
    ok_gloo.cases_done = 1;
    ExecutionOutcome ok_mpi = ok_gloo;
    ok_mpi.info = make_exec("mpi", 1, 3, 1);
    failed.info = make_exec("crashy", 2, 3, 1);
    failed.status = "failed";
    failed.reason = "rank 2 killed by signal 11 (SIGSEGV)";
    failed.failed_rank = 2;
    result.executions = {ok_gloo, ok_mpi, failed};
    result.exit_code = 1;
  }
  JobInfo job;
  JobResult result;
};

TEST_F(ReportMarkdown, ComparisonHasBothBackendsAndTheRatio) {
  const std::string md = render_markdown_summary(job, result, {{0, {"gloo", "mpi"}}});
  EXPECT_TRUE(contains(md, "### Comparison · allreduce · f32 · sum · out_of_place · 4 ranks"))
      << md;
  EXPECT_TRUE(contains(md, "gloo time (us)")) << md;
  EXPECT_TRUE(contains(md, "mpi time (us)")) << md;
  EXPECT_TRUE(contains(md, "mpi / gloo time")) << md;
  EXPECT_TRUE(contains(md, "| 1 MiB | 100.00 |")) << md;  // human size, gloo's mean time
  EXPECT_TRUE(contains(md, "1.50×")) << md;
}

TEST_F(ReportMarkdown, PerGroupTablesJobMetadataAndFailures) {
  const std::string md = render_markdown_summary(job, result, {});
  EXPECT_TRUE(contains(md, "# commbench results: gloo-vs-mpi")) << md;
  // No library version reported: the plugin's, said to be the plugin's.
  EXPECT_TRUE(contains(md, "gloo (plugin 0.3), mpi (plugin 4.1)")) << md;
  EXPECT_TRUE(contains(md, "### gloo · 4 ranks · allreduce · f32 · sum · out_of_place")) << md;
  EXPECT_TRUE(contains(md, "### mpi · 4 ranks · allreduce · f32 · sum · out_of_place")) << md;
  EXPECT_TRUE(contains(md,
                       "| size | bytes | count | time (us) | algbw (GB/s) | busbw (GB/s) | "
                       "p50 (us) | p99 (us) | CV | #wrong |"))
      << md;
  EXPECT_TRUE(contains(md, "| 1 MiB | 1048576 | 262144 |")) << md;
  EXPECT_TRUE(contains(md, "| crashy | 4 | failed |")) << md;
  EXPECT_TRUE(contains(md, "rank 2 killed by signal 11 (SIGSEGV)")) << md;
  EXPECT_TRUE(contains(md, "**Exit code:** 1 (1 execution failed")) << md;
}

// "Backends: ucx 0.1.0" was the plugin's version, read as UCX's: the library's version the
// workers reported (its `<name>_version` fact) comes first.
TEST_F(ReportMarkdown, BackendsShowTheLibraryVersionTheWorkersReported) {
  result.executions[0].metadata = {{"ranks", {{"0", {{"backend", {{"transport", "tcp"}, {"gloo_version", "0.5.0"}}}}}}}};
  const std::string md = render_markdown_summary(job, result, {});
  EXPECT_TRUE(contains(md, "**Backends:** gloo 0.5.0 (plugin 0.3), mpi (plugin 4.1)")) << md;
}

TEST_F(ReportMarkdown, RepeatsAreNumberedAndTheComparisonSaysWhichRepeatItShows) {
  // Two repeats of each backend: repeat 0 slow for gloo, fast for mpi. The tables once listed
  // the repeats as identical-looking rows and compared repeat 0 alone.
  result.cases = {make_case("gloo", "allreduce", 1 << 20, 300), make_case("mpi", "allreduce", 1 << 20, 150),
                  make_case("gloo", "allreduce", 1 << 20, 100), make_case("mpi", "allreduce", 1 << 20, 160)};
  result.cases[2].repeat = result.cases[3].repeat = 1;
  result.executions.resize(2);
  for (int i = 0; i < 2; ++i) {
    result.executions[static_cast<size_t>(i)].info.repeats = 2;
    result.executions[static_cast<size_t>(i)].info.repeat = i;
  }
  const std::string md = render_markdown_summary(job, result, {{0, {"gloo", "mpi"}}});
  EXPECT_TRUE(contains(md, "With 2 repeats: each backend's median repeat (by mean time).")) << md;
  EXPECT_TRUE(contains(md, "| backend | ranks | repeat | status |")) << md;
  EXPECT_TRUE(contains(md, "| 1 of 2 |")) << md;  // counted from 1, as the console does
  EXPECT_TRUE(contains(md, "| 2 of 2 |")) << md;
  EXPECT_FALSE(contains(md, "| 0 of 2 |")) << md;
  EXPECT_TRUE(contains(md, "| size | repeat | bytes |")) << md;
  // The median repeat of two is the faster (the lower middle): gloo 100, mpi 150, mpi / gloo 1.5.
  EXPECT_TRUE(contains(md, "| 1 MiB | 100.00 | 15.73 | 150.00 | 10.49 | 1.50× |")) << md;
}

// A probe: the scaling table showed median repeats without saying so, where output.md says
// every such table does.
TEST_F(ReportMarkdown, ScalingWithRepeatsSaysItShowsTheMedianRepeat) {
  result.cases.clear();
  for (int repeat = 0; repeat < 2; ++repeat)
    for (int world : {2, 4}) {
      result.cases.push_back(make_case("gloo", "allreduce", 1 << 20, 100.0 + 10 * repeat, world));
      result.cases.back().repeat = repeat;
    }
  const std::string md = render_markdown_summary(job, result, {});
  const auto at = md.find("### Scaling efficiency");
  ASSERT_NE(at, std::string::npos) << md;
  EXPECT_NE(md.find("With 2 repeats: each case's median repeat (by mean time).", at), std::string::npos) << md;
  result.cases.resize(2);  // one repeat: nothing to say
  EXPECT_FALSE(contains(render_markdown_summary(job, result, {}), "median repeat")) << md;
}

TEST_F(ReportMarkdown, NoisyCasesAreMarkedAndPipesEscaped) {
  result.cases[0].time_us.cv = 0.072;
  result.cases[1].status = "unsupported";
  result.cases[1].reason = "needs a|b";
  const std::string md = render_markdown_summary(job, result, {});
  EXPECT_TRUE(contains(md, "**7.2%** ⚠")) << md;
  EXPECT_TRUE(contains(md, "unsupported: needs a\\|b")) << md;
}

// Memory records (a `memory` run has no case record) once reached only the console and JSON.
TEST_F(ReportMarkdown, MemoryRecordsHaveTheirTable) {
  nlohmann::ordered_json mem{{"run", "mem"}, {"run_index", 1}, {"backend", "gloo"}, {"world_size", 3},
                             {"workload", "memory"}, {"model", "custom"}, {"batch_size", 8}, {"dtype", "bf16"},
                             {"optimizer", "momentum"}, {"sharding", "fsdp"}, {"memory", "host"}, {"status", "ok"},
                             {"computed", {{"model_state_bytes", 16 << 20}, {"activation_bytes", 3 << 19},
                                           {"total_bytes", (16 << 20) + (3 << 19)}}},
                             {"measured", {{"host", {{"buffers_bytes", 17 << 20}, {"workload_bytes", 19 << 20},
                                                     {"backend_bytes", 1 << 19}}},
                                           {"device", nullptr}}}};
  result.records.push_back({"memory", mem});
  result.records.push_back({"telemetry", {{"run_index", 1}}});  // not a memory record
  const std::string md = render_markdown_summary(job, result, {});
  EXPECT_TRUE(contains(md, "## Run `mem`")) << md;
  EXPECT_TRUE(contains(md, "### Memory")) << md;
  EXPECT_TRUE(contains(md, "| gloo | 3 | memory | custom | fsdp | bf16 | momentum | host | 8 | 16.0 | 1.5 | 17.5 | "
                           "17.0 | 19.0 | 0.5 | host RSS |"))
      << md;
}

TEST(MarkdownText, NamesCannotBreakHeadingsCodeSpansOrInjectHtml) {
  EXPECT_EQ(markdown_text("a\nb <b>x</b> p < 0.05"), "a b &lt;b>x&lt;/b> p < 0.05");
  EXPECT_EQ(markdown_cell("a|b\n<img src=x>"), "a\\|b &lt;img src=x>");
  EXPECT_EQ(markdown_code("plain"), "`plain`");
  EXPECT_EQ(markdown_code("p2p `tick`"), "`` p2p `tick` ``");  // ends with a backtick: padded
  EXPECT_EQ(markdown_code("a``b"), "```a``b```");
  EXPECT_EQ(markdown_code("`x"), "`` `x ``");
}

TEST_F(ReportMarkdown, RunHeadingsHoldTheNameWhateverItContains) {
  for (auto& c : result.cases) c.run = "pipe `tick` <b>x</b>";
  for (auto& e : result.executions) e.info.run = "pipe `tick` <b>x</b>";
  job.experiment = "<script>alert(1)</script>";
  const std::string md = render_markdown_summary(job, result, {});
  EXPECT_TRUE(contains(md, "## Run ``pipe `tick` <b>x</b>``\n")) << md;
  EXPECT_TRUE(contains(md, "# commbench results: &lt;script>alert(1)&lt;/script>\n")) << md;
}

TEST_F(ReportMarkdown, ReporterWritesSummaryMdAtJobDone) {
  test::TempDir tmp;
  MarkdownReporter reporter(tmp.path());
  reporter.job_started(job);
  RunSpec run;
  run.name = "sweep";
  run.index = 0;
  run.backends = {"mpi", "gloo"};  // file order decides the reference backend
  reporter.run_done(run, result.cases);
  EXPECT_FALSE(std::filesystem::exists(tmp.path() / "summary.md"));
  reporter.job_done(result);
  const std::string md = test::read_file(tmp.path() / "summary.md");
  EXPECT_TRUE(contains(md, "gloo / mpi time")) << md;
  EXPECT_TRUE(contains(md, "0.667×")) << md;  // three significant digits
}

}  // namespace
}  // namespace commbench
