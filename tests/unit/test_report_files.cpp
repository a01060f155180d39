// The files of a job folder: the folder itself, results.jsonl, results.csv, summary.json.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <set>
#include <thread>

#include "report/csv_reporter.h"
#include "report/jsonl_reporter.h"
#include "report/output_dir.h"
#include "report/output_failures.h"
#include "report/output_file.h"
#include "report/summary_json_reporter.h"
#include "test_report_helpers.h"

namespace commbench {
namespace {

using test::make_case;
using test::make_exec;
using test::make_unsupported;
using test::TempDir;

// ------------------------------------------------------------------ output folder

TEST(ReportOutputDir, NamedAfterExperimentAndTime) {
  TempDir tmp;
  const auto dir = make_job_output_dir(tmp.path() / "nested" / "base", "quickstart",
                                       std::chrono::system_clock::now());
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  EXPECT_EQ(dir.parent_path(), tmp.path() / "nested" / "base");
  EXPECT_TRUE(std::regex_match(dir.filename().string(), std::regex(R"(quickstart-\d{8}-\d{6})")))
      << dir;
}

TEST(ReportOutputDir, NeverReusesAFolderForTheSameTime) {
  TempDir tmp;
  const auto t = std::chrono::system_clock::now();
  const auto first = make_job_output_dir(tmp.path(), "exp", t);
  std::ofstream(first / "results.jsonl") << "precious\n";
  const auto second = make_job_output_dir(tmp.path(), "exp", t);
  const auto third = make_job_output_dir(tmp.path(), "exp", t);
  EXPECT_NE(first, second);
  EXPECT_EQ(second.string(), first.string() + "-2");
  EXPECT_EQ(third.string(), first.string() + "-3");
  EXPECT_EQ(test::read_file(first / "results.jsonl"), "precious\n");
}

TEST(ReportOutputDir, ConcurrentJobsGetDistinctFolders) {
  TempDir tmp;
  const auto t = std::chrono::system_clock::now();
  constexpr int kThreads = 4, kEach = 5;
  std::vector<std::vector<std::filesystem::path>> made(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      try {
        for (int k = 0; k < kEach; ++k)
          made[i].push_back(make_job_output_dir(tmp.path(), "race", t));
      } catch (const std::exception& e) {
        errors[i] = e.what();  // an exception escaping a thread would abort the whole binary
      }
    });
  for (auto& th : threads) th.join();
  for (const auto& e : errors) EXPECT_EQ(e, "");
  std::set<std::filesystem::path> all;
  for (const auto& v : made) all.insert(v.begin(), v.end());
  EXPECT_EQ(all.size(), size_t{kThreads * kEach});
}

TEST(ReportOutputDir, SanitizesTheName) {
  EXPECT_EQ(sanitize_file_name("gloo vs nccl/4 ranks"), "gloo_vs_nccl_4_ranks");
  EXPECT_EQ(sanitize_file_name("../../etc"), "_.._etc");
  EXPECT_EQ(sanitize_file_name("-rf"), "rf");
  EXPECT_EQ(sanitize_file_name(""), "experiment");
  EXPECT_EQ(sanitize_file_name("a.b_c-D9"), "a.b_c-D9");
  EXPECT_LE(sanitize_file_name(std::string(500, 'x')).size(), 100u);
  TempDir tmp;
  const auto dir = make_job_output_dir(tmp.path(), "a/b c", std::chrono::system_clock::now());
  EXPECT_EQ(dir.parent_path(), tmp.path());  // the '/' did not make a sub-folder
}

TEST(ReportOutputDir, UnusableBaseSaysWhichPath) {
  TempDir tmp;
  const auto file = tmp.path() / "not-a-dir";
  std::ofstream(file) << "x";
  try {
    make_job_output_dir(file, "exp", std::chrono::system_clock::now());
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not-a-dir"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("output_dir"), std::string::npos) << e.what();
  }
}

// ------------------------------------------------------------------ results.jsonl

TEST(ReportJsonl, EachCaseIsOnDiskBeforeTheNextArrives) {
  TempDir tmp;
  JsonlReporter reporter(tmp.path());
  const auto path = tmp.path() / "results.jsonl";
  JobInfo job;
  job.experiment = "exp";
  job.host = "node1";
  reporter.job_started(job);
  reporter.execution_started(make_exec("gloo", 0, 1, 3));

  const uint64_t sizes[] = {1024, 4096, 1 << 20};
  for (size_t i = 0; i < 3; ++i) {
    reporter.case_done(make_case("gloo", "allreduce", sizes[i], 10.0 * (i + 1)));
    const auto lines = test::read_lines(path);  // read back while the reporter is still open
    ASSERT_EQ(lines.size(), i + 2) << "job line + one line per case so far";
    const auto j = nlohmann::json::parse(lines.back());
    EXPECT_EQ(j.at("type"), "case");
    EXPECT_EQ(j.at("schema_version"), kResultsSchemaVersion);
    EXPECT_EQ(j.at("bytes"), sizes[i]);
    EXPECT_EQ(j.get<CaseRecord>().time_us.n, 4u);
  }
  const auto first = nlohmann::json::parse(test::read_lines(path).front());
  EXPECT_EQ(first.at("type"), "job");
  EXPECT_EQ(first.at("host"), "node1");

  ExecutionOutcome o;
  o.info = make_exec("gloo", 0, 1, 3);
  o.cases_done = 3;
  reporter.execution_done(o);
  auto j = nlohmann::json::parse(test::read_lines(path).back());
  EXPECT_EQ(j.at("type"), "execution");
  EXPECT_EQ(j.at("cases_done"), 3);

  JobResult result;
  result.exit_code = 1;
  result.finished_at = "2025-01-01T00:00:00+00:00";
  reporter.job_done(result);
  j = nlohmann::json::parse(test::read_lines(path).back());
  EXPECT_EQ(j.at("type"), "job_end");
  EXPECT_EQ(j.at("exit_code"), 1);
}

TEST(ReportJsonl, TypeAndVersionComeFirstOnEachLine) {
  TempDir tmp;
  JsonlReporter reporter(tmp.path());
  reporter.case_done(make_case("gloo", "allgather", 64, 1.0));
  const auto line = test::read_lines(tmp.path() / "results.jsonl").at(0);
  EXPECT_EQ(line.rfind(R"({"type":"case","schema_version":)" + std::to_string(kResultsSchemaVersion) + R"(,"experiment":)", 0), 0u) << line;
}

TEST(ReportJsonl, InvalidUtf8InAReasonDoesNotLoseTheLine) {
  TempDir tmp;
  JsonlReporter reporter(tmp.path());
  reporter.case_done(make_unsupported("gloo", 64, "bad byte \xff here"));
  const auto j = nlohmann::json::parse(test::read_lines(tmp.path() / "results.jsonl").at(0));
  EXPECT_EQ(j.at("status"), "unsupported");
}

TEST(ReportJsonl, UnwritableFolderIsAClearError) {
  TempDir tmp;
  EXPECT_THROW(JsonlReporter(tmp.path() / "does-not-exist"), std::runtime_error);
}

// ------------------------------------------------------------------ results.csv

TEST(ReportCsv, HeaderHasTheDocumentedColumns) {
  TempDir tmp;
  CsvReporter reporter(tmp.path());
  const auto rows = test::parse_csv(test::read_file(tmp.path() / "results.csv"));
  ASSERT_EQ(rows.size(), 1u);
  const std::vector<std::string> expected{
      "experiment",  "run",         "backend",     "world_size",  "op",          "bytes",
      "count",       "dtype",       "redop",       "placement",   "memory",      "root",
      "status",      "reason",      "timing",      "warmup",      "iterations",  "time_us_mean",
      "time_us_min", "time_us_p50", "time_us_p95", "time_us_p99", "time_us_max", "time_us_stddev",
      "time_us_cv",  "algbw_gbps",  "busbw_gbps",  "wrong",
      // appended later in schema 1 (additive): all_pairs's pair, windowed patterns' rate,
      // cuda memory staged through host buffers
      "src",         "dst",         "msg_rate_mps", "staging",
      // schema 2 (issue 12): how the time was taken, nccl-tests' size, the CV target
      "method",      "rank_aggregation", "total_bytes", "target_cv", "cv_reached", "repeat",
      // a correctness run of ranks sharing a GPU says so in the CSV too
      "oversubscribe_gpu",
      // what else tells two runs' cases apart (compare matches on them)
      "cpu_binding", "peers", "window", "options", "env",
      // strong scaling: the job-wide size a case is a share of
      "job_bytes",
      // a data_parallel step's own figures (overlap on and off read alike without them)
      "workload"};
  EXPECT_EQ(rows[0], expected);
}

TEST(ReportCsv, RowsAreFlushedAsCasesArriveAndReadBackExactly) {
  TempDir tmp;
  CsvReporter reporter(tmp.path());
  const auto path = tmp.path() / "results.csv";
  const auto& cols = CsvReporter::columns();
  auto col = [&](const std::string& name) {
    return static_cast<size_t>(std::find(cols.begin(), cols.end(), name) - cols.begin());
  };
  std::vector<CaseRecord> sent{make_case("gloo", "allreduce", 4096, 12.5),
                               make_case("gloo", "allreduce", 1 << 20, 812.25)};
  for (size_t i = 0; i < sent.size(); ++i) {
    reporter.case_done(sent[i]);
    const auto rows = test::parse_csv(test::read_file(path));
    ASSERT_EQ(rows.size(), i + 2);
    const auto& row = rows.back();
    ASSERT_EQ(row.size(), cols.size());
    EXPECT_EQ(row[col("bytes")], std::to_string(sent[i].bytes));
    // Shortest round-trip formatting: the text parses back to the very same double.
    EXPECT_EQ(std::stod(row[col("time_us_mean")]), sent[i].time_us.mean);
    EXPECT_EQ(std::stod(row[col("busbw_gbps")]), sent[i].busbw_gbps);
    EXPECT_EQ(row[col("wrong")], "0");
  }
}

TEST(ReportCsv, ACorrectnessRunOfRanksSharingAGpuSaysSo) {
  TempDir tmp;
  CsvReporter reporter(tmp.path());
  auto shared = make_case("gloo", "allreduce", 4096, 12.5);
  shared.oversubscribe_gpu = true;
  reporter.case_done(shared);
  reporter.case_done(make_case("gloo", "allreduce", 4096, 12.5));
  const auto rows = test::parse_csv(test::read_file(tmp.path() / "results.csv"));
  ASSERT_EQ(rows.size(), 3u);
  const auto& cols = CsvReporter::columns();
  const auto at = static_cast<size_t>(std::find(cols.begin(), cols.end(), "oversubscribe_gpu") - cols.begin());
  ASSERT_LT(at, cols.size());
  EXPECT_EQ(rows[1][at], "true");
  EXPECT_EQ(rows[2][at], "");  // as the JSON field is absent
}

// Two data_parallel steps that differ only in overlap once read alike in results.csv.
TEST(ReportCsv, AWorkloadStepsFiguresAreOneJsonCell) {
  TempDir tmp;
  CsvReporter reporter(tmp.path());
  auto step = make_case("gloo", "data_parallel", 4096, 1500.0);
  step.workload = {{"overlap", true}, {"samples_per_s", 812.5}, {"exposed_comm_ms", 0.25}, {"model", "a,b"}};
  reporter.case_done(step);
  reporter.case_done(make_case("gloo", "allreduce", 4096, 12.5));
  const auto rows = test::parse_csv(test::read_file(tmp.path() / "results.csv"));
  ASSERT_EQ(rows.size(), 3u);
  const auto& cols = CsvReporter::columns();
  const auto at = static_cast<size_t>(std::find(cols.begin(), cols.end(), "workload") - cols.begin());
  ASSERT_LT(at, cols.size());
  EXPECT_EQ(nlohmann::json::parse(rows[1][at]), step.workload);
  EXPECT_EQ(rows[1][at], R"({"exposed_comm_ms":0.25,"model":"a,b","overlap":true,"samples_per_s":812.5})");
  EXPECT_EQ(rows[2][at], "");  // an op case has none
}

// Two runs that differ in peers, window, a backend option or env measure different things: the
// records and the CSV say which (compact JSON for the structured ones; empty where absent).
TEST(ReportCsv, RunSettingsThatChangeTheMeasurementAreColumnsAndRoundTrip) {
  TempDir tmp;
  CsvReporter reporter(tmp.path());
  auto set = make_case("gloo", "unidir_bw", 4096, 12.5);
  set.peers = {0, 2};
  set.window = 8;
  set.options = {{"algorithm", "ring"}, {"a,b", "x\"y"}};
  set.env = {{"NCCL_ALGO", "Ring"}};
  set.cpu_binding = "core";
  reporter.case_done(set);
  reporter.case_done(make_case("gloo", "allreduce", 4096, 12.5));
  const auto rows = test::parse_csv(test::read_file(tmp.path() / "results.csv"));
  ASSERT_EQ(rows.size(), 3u);
  const auto& cols = CsvReporter::columns();
  auto at = [&](size_t row, const std::string& name) {
    return rows[row][static_cast<size_t>(std::find(cols.begin(), cols.end(), name) - cols.begin())];
  };
  EXPECT_EQ(at(1, "peers"), "[0,2]");
  EXPECT_EQ(at(1, "window"), "8");
  EXPECT_EQ(at(1, "options"), "{\"a,b\":\"x\\\"y\",\"algorithm\":\"ring\"}");
  EXPECT_EQ(at(1, "env"), "{\"NCCL_ALGO\":\"Ring\"}");
  EXPECT_EQ(at(1, "cpu_binding"), "core");
  for (const char* name : {"peers", "window", "options", "env", "cpu_binding"}) EXPECT_EQ(at(2, name), "") << name;

  nlohmann::json j = set;
  EXPECT_EQ(j.at("peers"), nlohmann::json::array({0, 2}));
  EXPECT_EQ(j.at("window"), 8);
  EXPECT_EQ(j.at("env").at("NCCL_ALGO"), "Ring");
  const CaseRecord back = j.get<CaseRecord>();
  EXPECT_EQ(back.peers, set.peers);
  EXPECT_EQ(back.window, set.window);
  EXPECT_EQ(back.options, set.options);
  EXPECT_EQ(back.env, set.env);
  const nlohmann::json plain = make_case("gloo", "allreduce", 4096, 12.5);
  for (const char* name : {"peers", "window", "options", "env"}) EXPECT_FALSE(plain.contains(name)) << name;
}

TEST(ReportCsv, QuotesFieldsWithCommasQuotesAndNewlines) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_field(" padded"), "\" padded\"");
  EXPECT_EQ(csv_field(""), "");

  TempDir tmp;
  CsvReporter reporter(tmp.path());
  const std::string reason = "dtype f16, redop \"prod\"\nnot supported by gloo";
  reporter.case_done(make_unsupported("gloo", 64, reason));
  const auto rows = test::parse_csv(test::read_file(tmp.path() / "results.csv"));
  ASSERT_EQ(rows.size(), 2u);
  ASSERT_EQ(rows[1].size(), CsvReporter::columns().size());
  const auto& cols = CsvReporter::columns();
  auto at = [&](const std::string& name) {
    return rows[1][static_cast<size_t>(std::find(cols.begin(), cols.end(), name) - cols.begin())];
  };
  EXPECT_EQ(at("reason"), reason);
  EXPECT_EQ(at("status"), "unsupported");
  // Not measured: numbers are empty (NaN in pandas), not zeros; wrong = -1 is empty too.
  EXPECT_EQ(at("time_us_mean"), "");
  EXPECT_EQ(at("busbw_gbps"), "");
  EXPECT_EQ(at("wrong"), "");
}

// Issue 28 §16: text a spreadsheet would run as a formula is made inert (OWASP "CSV injection"):
// an apostrophe in front, the field quoted. Numbers never go through csv_field.
TEST(ReportCsv, FormulaLikeTextIsEscapedTheSpreadsheetSafeWay) {
  EXPECT_EQ(csv_field("=HYPERLINK(\"http://x\",\"y\")"), "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\"");
  EXPECT_EQ(csv_field("+1+2"), "\"'+1+2\"");
  EXPECT_EQ(csv_field("-2+3"), "\"'-2+3\"");
  EXPECT_EQ(csv_field("@SUM(A1)"), "\"'@SUM(A1)\"");
  EXPECT_EQ(csv_field("\tcmd"), "\"'\tcmd\"");
  EXPECT_EQ(csv_field("a=b"), "a=b") << "only a leading sign starts a formula";
  TempDir tmp;
  CsvReporter reporter(tmp.path());
  CaseRecord rec = make_unsupported("gloo", 64, "x");
  rec.experiment = "=HYPERLINK(\"http://evil\",\"click\")";
  reporter.case_done(rec);
  const std::string text = test::read_file(tmp.path() / "results.csv");
  EXPECT_EQ(text.find(",=HYPERLINK"), std::string::npos) << text;
  const auto rows = test::parse_csv(text);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1][0], "'" + rec.experiment);
}

// ------------------------------------------------------------------ what was written (issue 28 §7)

TEST(ReportOutputFailures, ASummaryIsWrittenOnlyWhenItIsOnDisk) {
  TempDir tmp;
  // The temporary file cannot be created (here: a folder in its place): the failure is reported
  // under the summary's own name, which is what the final message looks up.
  std::filesystem::create_directories(tmp.path() / "summary.json.tmp");
  try {
    write_file_atomically(tmp.path() / "summary.json", "{}");
    FAIL() << "wrote through a folder";
  } catch (const OutputError& e) {
    EXPECT_EQ(e.path(), tmp.path() / "summary.json");
    EXPECT_NE(std::string(e.what()).find("summary.json.tmp"), std::string::npos) << e.what();
  }
  std::ofstream(tmp.path() / "summary.md") << "# summary\n";
  JobResult result;
  const std::vector<MultiReporter::OutputFailure> failures{
      {(tmp.path() / "summary.json.tmp").string(), "cannot create it: No space left on device"}};
  const std::string text = describe_output_failures(failures, result, {}, 0, tmp.path());
  EXPECT_NE(text.find("summary.json: NOT written"), std::string::npos) << text;
  EXPECT_NE(text.find("summary.md: written"), std::string::npos) << text;
  std::filesystem::remove(tmp.path() / "summary.md");
  const std::string gone = describe_output_failures({}, result, {}, 0, tmp.path());
  EXPECT_NE(gone.find("summary.md: NOT written (the file is not there)"), std::string::npos) << gone;
}

// ------------------------------------------------------------------ summary.json

TEST(ReportSummaryJson, HoldsJobExperimentExecutionsAndResults) {
  TempDir tmp;
  SummaryJsonReporter reporter(tmp.path());
  JobInfo job;
  job.experiment = "cmp";
  job.file = "configs/cmp.toml";
  job.output_dir = tmp.path().string();
  job.started_at = "2025-01-01T10:00:00+01:00";
  job.host = "node7";
  job.commbench_version = "0.1.0";
  job.experiment_json = {{"name", "cmp"}, {"runs", nlohmann::json::array()}};
  job.plugins = {{"gloo", {{"name", "gloo"}, {"version", "1.2"}}}};
  job.environment = {{"launcher", "local"}};
  reporter.job_started(job);

  JobResult result;
  result.finished_at = "2025-01-01T10:05:00+01:00";
  result.exit_code = 1;
  result.cases = {make_case("gloo", "allreduce", 4096, 10, 4),
                  make_case("gloo", "allreduce", 4096, 8, 2),
                  make_case("gloo", "allreduce", 4096, 8, 4)};
  ExecutionOutcome ok;
  ok.info = make_exec("gloo", 0, 3, 1, 4);
  ok.metadata = {{"transport", "tcp"}, {"ranks", {{"0", {{"host", "a"}}}}}};
  ExecutionOutcome ok2;
  ok2.info = make_exec("gloo", 1, 3, 1, 2);
  ok2.metadata = {{"device", "lo"}, {"ranks", {{"1", {{"host", "b"}}}}}};
  ExecutionOutcome failed;
  failed.info = make_exec("gloo", 2, 3, 1, 6);
  failed.status = "failed";
  failed.reason = "rank 5 exited with code 3";
  result.executions = {ok, ok2, failed};
  reporter.job_done(result);

  const auto doc = nlohmann::json::parse(test::read_file(tmp.path() / "summary.json"));
  EXPECT_EQ(doc.at("schema_version"), kResultsSchemaVersion);
  const auto& j = doc.at("job");
  EXPECT_EQ(j.at("name"), "cmp");
  EXPECT_EQ(j.at("host"), "node7");
  EXPECT_EQ(j.at("started_at"), job.started_at);
  EXPECT_EQ(j.at("finished_at"), result.finished_at);
  EXPECT_EQ(j.at("commbench_version"), "0.1.0");
  EXPECT_EQ(j.at("world_sizes"), nlohmann::json({2, 4, 6}));  // distinct, sorted
  EXPECT_EQ(j.at("backends").at("gloo").at("version"), "1.2");
  EXPECT_EQ(j.at("backends").at("gloo").at("metadata"),
            nlohmann::json({{"transport", "tcp"},
                            {"device", "lo"},
                            {"ranks", {{"0", {{"host", "a"}}}, {"1", {{"host", "b"}}}}}}));
  EXPECT_EQ(j.at("environment").at("launcher"), "local");
  EXPECT_EQ(doc.at("experiment"), job.experiment_json);
  ASSERT_EQ(doc.at("executions").size(), 3u);
  EXPECT_EQ(doc.at("executions")[2].at("reason"), failed.reason);
  ASSERT_EQ(doc.at("results").size(), 3u);
  EXPECT_EQ(doc.at("results")[1].get<CaseRecord>().world_size, 2);
  EXPECT_EQ(doc.at("exit_code"), 1);
  EXPECT_FALSE(std::filesystem::exists(tmp.path() / "summary.json.tmp"));
}

}  // namespace
}  // namespace commbench
