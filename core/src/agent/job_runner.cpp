#include "agent/job_runner.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <set>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "agent/execution_monitor.h"
#include "agent/worker_process.h"
#include "bootstrap/store.h"
#include "launch/rank_discovery.h"
#include "plan/plan.h"
#include "report/console_reporter.h"
#include "report/csv_reporter.h"
#include "report/execution_log_reporter.h"
#include "report/jsonl_reporter.h"
#include "report/markdown_reporter.h"
#include "report/multi_reporter.h"
#include "report/output_dir.h"
#include "report/summary_json_reporter.h"

namespace commbench {
namespace {

std::string iso_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S%z", &tm);
  return buf;
}

std::string hostname() {
  char h[256] = {0};
  ::gethostname(h, sizeof(h) - 1);
  return h;
}

void on_signal(int sig) { g_interrupt_signal.store(sig); }

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

nlohmann::json environment_facts(const LaunchContext& launch) {
  const auto res = std::chrono::steady_clock::period();
  timespec ts{};
  ::clock_getres(CLOCK_MONOTONIC, &ts);
  return {{"launcher", launch.launcher},
          {"launcher_reason", launch.reason},
          {"clock", "std::chrono::steady_clock (CLOCK_MONOTONIC)"},
          {"clock_resolution_ns", ts.tv_sec * 1e9 + ts.tv_nsec},
          {"steady_clock_period_ns", 1e9 * res.num / res.den}};
}

std::vector<std::unique_ptr<WorkerProcess>> start_workers(const Execution& exec,
                                                         const std::string& plugin_path,
                                                         const std::string& store_addr,
                                                         const std::filesystem::path& log_dir,
                                                         const JobOptions& opts) {
  const std::string spec = nlohmann::json(exec).dump();
  std::vector<std::unique_ptr<WorkerProcess>> workers;
  for (int r = 0; r < exec.world_size; ++r) {
    WorkerLaunch l;
    l.exe = opts.self_exe;
    l.args = {"__worker", "--rank", std::to_string(r), "--world", std::to_string(exec.world_size),
              "--local-rank", std::to_string(r), "--local-world", std::to_string(exec.world_size),
              "--store", store_addr, "--plugin", plugin_path, "--result-fd", "3"};
    l.env_overrides = exec.env;
    l.stdin_data = spec;
    l.log_path = (log_dir / fmt::format("exec{}-{}-w{}-rank{}.log", exec.index, exec.backend,
                                        exec.world_size, r)).string();
    workers.push_back(std::make_unique<WorkerProcess>(l));
  }
  return workers;
}

}  // namespace

int run_job(const Experiment& exp, const PluginCatalog& plugins, const JobOptions& opts) {
  install_signal_handlers();
  const std::vector<Execution> plan = plan_job(exp);
  const std::filesystem::path job_dir = make_job_output_dir(
      opts.output_dir.empty() ? exp.output_dir : opts.output_dir, exp.name,
      std::chrono::system_clock::now());
  const std::filesystem::path log_dir = job_dir / "logs";
  std::filesystem::create_directories(log_dir);

  MultiReporter reporter;
  if (!opts.quiet) reporter.add(std::make_unique<ConsoleReporter>(stdout, stderr));
  reporter.add(std::make_unique<JsonlReporter>(job_dir));
  reporter.add(std::make_unique<CsvReporter>(job_dir));
  reporter.add(std::make_unique<ExecutionLogReporter>(job_dir));
  reporter.add(std::make_unique<SummaryJsonReporter>(job_dir));
  reporter.add(std::make_unique<MarkdownReporter>(job_dir));

  JobInfo job;
  job.experiment = exp.name;
  job.file = exp.file;
  job.output_dir = job_dir.string();
  job.started_at = iso_now();
  job.host = hostname();
  job.commbench_version = COMMBENCH_VERSION;
  job.experiment_json = exp.as_parsed;
  std::set<std::string> used;
  for (const auto& e : plan) used.insert(e.backend);
  for (const auto& b : used)
    if (auto it = plugins.find(b); it != plugins.end()) job.plugins[b] = to_json(it->second);
  const LaunchContext launch = discover_launch(current_environment());
  job.environment = environment_facts(launch);
  reporter.job_started(job);

  // Local mode: the store listens on loopback only, on a port the kernel picks.
  StoreServerOptions so;
  so.bind_host = launch.store_host;
  auto server = StoreServer::start(so);
  const std::string store_addr = fmt::format("{}:{}", server->host(), server->port());

  JobResult result;
  bool interrupted = false;
  for (const RunSpec& run : exp.runs) {
    std::vector<CaseRecord> run_records;
    for (const Execution& exec : plan) {
      if (exec.run_index != run.index || interrupted) continue;
      ExecutionInfo info{exec.run_index, exec.run, exec.backend, exec.world_size, exec.index,
                         static_cast<int>(plan.size()), expected_records(exec)};
      reporter.execution_started(info);
      ExecutionResult res;
      try {
        auto workers = start_workers(exec, plugins.at(exec.backend).path, store_addr, log_dir, opts);
        res = monitor_execution(exec, info, workers, reporter);
      } catch (const std::exception& e) {
        res.outcome.info = info;
        res.outcome.status = "failed";
        res.outcome.reason = fmt::format("could not start workers: {}", e.what());
      }
      try {
        // Keys of a finished execution are never read again; dropping them bounds the store.
        auto client = StoreClient::connect(server->host(), server->port(), Millis(2000));
        client->delete_prefix(fmt::format("exec{}/", exec.index));
      } catch (...) {
      }
      reporter.execution_done(res.outcome);
      interrupted = res.outcome.status == "interrupted" || g_interrupt_signal.load() != 0;
      run_records.insert(run_records.end(), res.cases.begin(), res.cases.end());
      result.cases.insert(result.cases.end(), res.cases.begin(), res.cases.end());
      result.executions.push_back(std::move(res.outcome));
    }
    reporter.run_done(run, run_records);
  }

  result.finished_at = iso_now();
  int code = kExitOk;
  for (const auto& o : result.executions)
    if (o.status == "failed") code = kExitFailures;
  for (const auto& c : result.cases)
    if (c.wrong > 0 || c.status == "failed") code = kExitFailures;
  if (interrupted) code = kExitInterrupted;
  result.exit_code = code;
  reporter.job_done(result);
  server->stop();
  return code;
}

}  // namespace commbench
