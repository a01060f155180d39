#include "agent/job_runner.h"

#include <signal.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "agent/agent_group.h"
#include "agent/broken_case.h"
#include "agent/execution_monitor.h"
#include "agent/exposure_warnings.h"
#include "agent/job_end.h"
#include "agent/observability.h"
#include "agent/orphan_reaper.h"
#include "agent/outcome_merge.h"
#include "agent/worker_process.h"
#include "bootstrap/store.h"
#include "common/console_text.h"
#include "common/failure_kind.h"
#include "launch/cpu_binding.h"
#include "launch/rank_discovery.h"
#include "measure/host_timer.h"
#include "observe/cpu_list.h"
#include "observe/host_load.h"
#include "observe/host_metadata.h"
#include "plan/plan.h"
#include "report/trace_merge.h"
#include "report/format.h"
#include "report/multi_reporter.h"
#include "report/output_dir.h"
#include "report/output_failures.h"
#include "report/output_file.h"
#include "report/output_formats.h"

namespace commbench {
namespace {

std::string iso_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[64];
  const size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S%z", &tm);
  std::string text(buf, n);
  // RFC 3339 (what docs/output.md shows and JavaScript's Date reads): "+01:00", not strftime's "+0100".
  if (text.size() >= 5 && (text[text.size() - 5] == '+' || text[text.size() - 5] == '-')) text.insert(text.size() - 2, ":");
  return text;
}

std::string hostname() {
  char h[256] = {0};
  ::gethostname(h, sizeof(h) - 1);
  return h;
}

void on_signal(int sig) {
  g_interrupt_signal.store(sig);
  g_interrupt_count.fetch_add(1);
}

// SIGHUP (the terminal closed, the ssh connection dropped) ends the job like SIGTERM does, in
// order: workers stopped, the interrupted execution recorded, files completed. Without a handler
// it would kill the agent on the spot and leave no record of the job's end.
void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGHUP, &sa, nullptr);
}

// The agent's own clock facts; summary.json replaces "clock" and "clock_resolution_ns" with the
// timer the ranks reported (make_summary_json), which is the one that timed the cases.
nlohmann::json environment_facts(const LaunchContext& launch) {
  const auto res = std::chrono::steady_clock::period();
  timespec ts{};
  ::clock_getres(CLOCK_MONOTONIC, &ts);
  return {{"launcher", launch.launcher},
          {"launcher_reason", launch.reason},
          {"clock_resolution_ns", ts.tv_sec * 1e9 + ts.tv_nsec},
          {"steady_clock_period_ns", 1e9 * res.num / res.den}};
}

// The experiment's own worker environment heads each rank's log: an experiment file can set
// LD_PRELOAD and the like, and whoever reads a log should see what ran (docs/launching.md).
void note_experiment_environment(const Execution& exec, const std::string& log_path) {
  if (exec.env.empty()) return;
  if (std::FILE* f = std::fopen(log_path.c_str(), "a")) {
    for (const auto& [k, v] : exec.env)
      std::fprintf(f, "commbench: the experiment sets %s=%s\n", console_safe(k).c_str(), console_safe(v).c_str());
    std::fclose(f);
  }
}

// Once per job on agent 0's console: every variable the experiment hands to the workers and
// every profiler command template, since either can run arbitrary code. Escaped: a value with a
// line break or ESC could otherwise forge the lines after it or erase this notice.
void print_experiment_overrides(const Experiment& exp) {
  for (const RunSpec& run : exp.runs) {
    std::string what;
    for (const auto& [k, v] : run.env)
      what += fmt::format("{}{}={}", what.empty() ? "" : ", ", console_safe(k), console_safe(v));
    if (!what.empty()) std::fprintf(stderr, "commbench: run '%s' sets the workers' environment: %s\n", run.name.c_str(), what.c_str());
    if (run.profiler)
      std::fprintf(stderr, "commbench: run '%s' starts its workers under a profiler: %s\n", run.name.c_str(),
                   console_safe(run.profiler->tool == "command" ? run.profiler->command : run.profiler->tool).c_str());
  }
}

// Thrown when a signal arrives while workers are being started: the launch stops at once.
struct InterruptedLaunch {};

// This agent's workers of one execution: every rank in local mode, its own rank under a launcher.
// Appended to `workers` one by one, so that when a start fails (no more processes allowed) or a
// signal arrives midway, the caller knows which ranks ran and stops exactly those. Started in
// batches: after each, a worker that already died (the host out of memory or processes) ends
// the launch there instead of after thousands more; the monitor then names that rank.
void start_workers(const Execution& exec, const std::vector<int>& ranks, const AgentGroup& group,
                   const std::string& plugin_path, const std::filesystem::path& log_dir, const JobOptions& opts,
                   const RunSpec& run, JobObservability& observe, std::vector<std::unique_ptr<WorkerProcess>>& workers) {
  constexpr size_t kSpawnBatch = 32;
  const LaunchContext& launch = group.launch();
  // The agent's own CPUs, read once: the spawning thread's mask changes around each bound spawn.
  static const std::set<int> agent_cpus = affinity_cpus();
  static const std::set<int> host_cpus = host_cpuset();
  // Under a launcher the dealing index is its LOCAL_RANK, which an uneven layout can put beyond
  // the count of ranks this host was told it has.
  const int local_world = group.ranks_on_this_host(exec.world_size);
  const CpuBindingPlan binding =
      plan_cpu_binding(exec.cpu_binding, agent_cpus, host_cpus, group.solo(),
                       group.solo() ? local_world : std::max(local_world, launch.local_rank + 1));
  static std::set<std::string> warned;  // once per job (an agent process runs one); main thread only
  if (!binding.note.empty() && warned.insert(binding.note).second)
    std::fprintf(stderr, "commbench: warning: %s\n", binding.note.c_str());
  Execution sent = exec;
  sent.cpu_binding = binding.applied;  // the records say what was done, not what was asked
  const std::string spec = nlohmann::json(sent).dump();
  for (int r : ranks) {
    if (g_interrupt_signal.load() != 0) throw InterruptedLaunch{};
    if (workers.size() % kSpawnBatch == 0 && !workers.empty())
      for (auto& w : workers)
        if (w->poll_exit() && !w->exited_cleanly()) return;
    // Local mode: all ranks share this host. Launcher: the launcher's local layout.
    const int local_rank = group.solo() ? r : launch.local_rank;
    WorkerLaunch l;
    l.exe = opts.self_exe;
    l.args = {"__worker", "--rank", std::to_string(r), "--world", std::to_string(exec.world_size),
              "--local-rank", std::to_string(local_rank), "--local-world", std::to_string(local_world),
              "--store", group.store_address(), "--plugin", plugin_path, "--result-fd", "3",
              "--agent-pid", std::to_string(::getpid())};
    // A world over several hosts gathers through each host's first rank (bootstrap/host_route.h).
    if (const AgentGroup::HostPlace place = group.host_place(exec.world_size); place.hosts > 1) {
      std::string list;
      for (int h : place.ranks) list += fmt::format("{}{}", list.empty() ? "" : ",", h);
      l.args.insert(l.args.end(), {"--host-index", std::to_string(place.index), "--hosts",
                                   std::to_string(place.hosts), "--host-ranks", list});
    }
    if (exec.trace) {
      l.args.push_back("--trace-file");
      l.args.push_back(rank_trace_path(log_dir.parent_path(), exec.index, r).string());
    }
    l.cpus = cpus_for_local_rank(binding.units, local_rank);
    if (binding.own_cpus) l.args.push_back("--own-cpus");
    l.env_overrides = exec.env;
    if (!group.token().empty()) l.env_overrides["COMMBENCH_STORE_TOKEN"] = group.token();
    l.stdin_data = spec;
    l.log_path = (log_dir / fmt::format("exec{}-{}-w{}-rank{}.log", exec.index, exec.backend,
                                        exec.world_size, r)).string();
    observe.wrap_worker(exec, run, r, l);
    note_experiment_environment(exec, l.log_path);
    workers.push_back(std::make_unique<WorkerProcess>(l));
  }
}

std::vector<int> hosted_ranks(const AgentGroup& group, int world) {
  std::vector<int> ranks;
  if (group.solo()) {
    for (int r = 0; r < world; ++r) ranks.push_back(r);
  } else if (group.rank() < world) {
    ranks.push_back(group.rank());
  }
  return ranks;
}

std::string plan_digest(const std::vector<Execution>& plan) {
  const std::string text = nlohmann::json(plan).dump();
  uint64_t h = 1469598103934665603ull;  // FNV-1a: identical files give identical digests
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return fmt::format("{:016x}", h);
}

// The job once the agents have met: agree on it, run every execution, write the results.
int run_with_agents(const Experiment& exp, const PluginCatalog& plugins, const JobOptions& opts,
                    const std::vector<Execution>& plan, const EnvMap& env, const std::filesystem::path& out_base,
                    Millis execution_wait, AgentGroup* group) {

  // An output that cannot be written is found here, before any worker starts: exit 2, naming
  // the path and the reason (OutputError), rather than after an hour of measurements.
  std::filesystem::path job_dir, log_dir;
  MultiReporter reporter;
  try {
    if (group->rank() == 0)
      job_dir = make_job_output_dir(out_base, exp.name, std::chrono::system_clock::now());
    std::string folder;
    try {
      folder = group->agree(plan_digest(plan), job_dir.filename().string(), execution_wait);
    } catch (...) {
      // The job never started: its folder, still empty, is not left behind as if it were a job's.
      std::error_code ec;
      if (!job_dir.empty() && std::filesystem::is_empty(job_dir, ec)) std::filesystem::remove(job_dir, ec);
      throw;
    }
    if (group->rank() != 0) job_dir = out_base / folder;  // the same folder on a shared file system
    log_dir = job_dir / "logs";
    std::error_code ec;
    std::filesystem::create_directories(log_dir, ec);
    if (ec) throw_output_error(log_dir, ec.value(), "create the log folder");

    // Only agent 0 reports: it hosts rank 0, which is where every record is assembled.
    if (group->rank() == 0) {
      const OutputContext ctx{job_dir, stdout, stderr};
      for (const OutputFormat& f : output_formats()) {
        const bool chosen = output_chosen(exp, f.name);
        if (!f.always && (!chosen || (f.name == "console" && opts.quiet))) continue;
        reporter.add(f.make(ctx));
      }
    }
  } catch (const OutputError& e) {
    std::fprintf(stderr, "commbench run: %s\n", e.what());
    group->announce_leaving({false, e.what()});
    return kExitInvalid;
  }

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
  job.environment = environment_facts(group->launch());
  for (const auto& e : plan) {
    job.planned_records += expected_records(e);
    job.max_samples_per_record = std::max(job.max_samples_per_record, e.min_time_s > 0 ? e.max_iterations : e.iterations);
  }
  reporter.job_started(job);
  if (!reporter.output_failures().empty()) {  // e.g. a full disk: the first line did not fit
    std::fprintf(stderr, "commbench run: %s\n", reporter.output_failures().front().message.c_str());
    return kExitInvalid;
  }
  if (group->rank() == 0) {
    print_experiment_overrides(exp);
    for (const std::string& w : inherited_exposure_warnings(plan, env, group->launch().single_host()))
      std::fprintf(stderr, "commbench: %s\n", w.c_str());
  }

  JobObservability observe(exp, job_dir, group->rank(), opts.self_exe);
  JobResult result;
  bool interrupted = false;
  bool stop_for_output = false;  // a results file could not be written (disk full, I/O error)
  for (const RunSpec& run : exp.runs) {
    std::vector<CaseRecord> run_records;
    for (const Execution& exec : plan) {
      if (exec.run_index != run.index) continue;
      ExecutionInfo info{exec.run_index, exec.run, exec.backend, exec.world_size, exec.index,
                         static_cast<int>(plan.size()), expected_records(exec), exec.repeat, exec.repeats,
                         exec.timeout_s, HostLoad{}};
      ExecutionResult res;
      res.outcome.info = info;
      if (interrupted || stop_for_output) {
        // Listed, not left out: the counts, compare and check then see the cases it never ran.
        if (group->rank() == 0) {
          res.outcome.status = "interrupted";
          res.outcome.failure_kind = failure_kind_name(stop_for_output ? FailureKind::kOther : FailureKind::kInterrupted);
          res.outcome.reason = stop_for_output ? "not started: the job stopped because results could not be written"
                                               : "not started: the job was interrupted before it";
          group->cancel_execution(exec.index, res.outcome.reason);
          reporter.execution_done(res.outcome);
          result.executions.push_back(std::move(res.outcome));
        }
        continue;
      }
      if (!group->solo() && exec.world_size > group->size()) {
        // The launcher decides the number of ranks: a larger world cannot run in this job.
        res.outcome.status = "skipped";
        res.outcome.reason = fmt::format("needs {} ranks; the launcher started {}", exec.world_size, group->size());
        reporter.execution_started(info);
        reporter.execution_done(res.outcome);
        result.executions.push_back(std::move(res.outcome));
        continue;
      }
      // Warm-up and telemetry before the agents meet: under a launcher every agent warms its own
      // host, and the workers start together after the slowest warm-up, not during it.
      observe.before_execution(exec, run, [] { return g_interrupt_signal.load() != 0; });
      if (auto skip = group->start_execution(exec.index, exec.world_size, execution_wait)) {
        // A signal while the agents met, here or to an agent this execution needs (it left): the
        // job ends here, as for one during an execution.
        interrupted = g_interrupt_signal.load() != 0 || (group->rank() == 0 && group->peer_left(exec.world_size));
        res.outcome.status = interrupted ? "interrupted" : "skipped";
        if (interrupted) res.outcome.failure_kind = failure_kind_name(FailureKind::kInterrupted);
        res.outcome.reason = *skip;
        // A rank's task that ended on an error of its own: this execution fails naming it.
        if (const auto leaver = interrupted || group->rank() != 0 ? std::nullopt : group->take_failed_leaver(exec.world_size)) {
          res.outcome.status = "failed";
          res.outcome.failed_rank = leaver->first;
          res.outcome.failure_kind = failure_kind_name(FailureKind::kOther);
          res.outcome.reason = fmt::format("rank {}'s task ended on an error before this execution: {}", leaver->first,
                                           leaver->second);
        }
        if (group->rank() == 0) {
          reporter.execution_started(info);
          reporter.execution_done(res.outcome);
          result.executions.push_back(std::move(res.outcome));
        }
        continue;
      }
      std::vector<int> ranks = hosted_ranks(*group, exec.world_size);
      if (ranks.empty()) continue;  // this agent's rank is not part of this world size
      // After the previous execution's workers are gone and before these start: what else
      // competes for this host's CPUs (docs/output.md, "Busy machine").
      info.host_load = sample_host_load(static_cast<int>(ranks.size()));
      res.outcome.info = info;
      reporter.execution_started(info);
      // A results file that stopped taking writes stops the job: measuring on would only add
      // results that cannot be kept.
      bool output_failed = false;
      std::optional<std::string> store_lost;  // rank 0's agent went away mid-execution
      ExternalAbort abort = [&]() -> std::optional<std::string> {
        if (!reporter.output_failures().empty()) {
          output_failed = true;
          return reporter.output_failures().front().message;
        }
        if (group->solo()) return std::nullopt;
        try {
          return group->abort_reason(exec.index);
        } catch (const LaunchError& e) {
          store_lost = e.what();
          return store_lost;
        }
      };
      const uint64_t spawned_since = process_clock_now();
      {
        std::vector<std::unique_ptr<WorkerProcess>> workers;
        try {
          start_workers(exec, ranks, *group, plugins.at(exec.backend).path, log_dir, opts, run, observe, workers);
          ranks.resize(workers.size());  // fewer when one died during the launch: the monitor names it
          res = monitor_execution(exec, info, workers, ranks, reporter, abort, observe.annotator());
        } catch (const InterruptedLaunch&) {
          const int sig = g_interrupt_signal.load();
          res.outcome.info = info;
          res.outcome.status = "interrupted";
          res.outcome.reason = fmt::format("interrupted by signal {} (SIG{}) while starting workers ({} of {} started)",
                                           sig, sigabbrev_np(sig) ? sigabbrev_np(sig) : "?", workers.size(), ranks.size());
          res.outcome.failure_kind = failure_kind_name(FailureKind::kInterrupted);
        } catch (const std::exception& e) {
          res.outcome.info = info;
          res.outcome.status = "failed";
          res.outcome.reason = fmt::format("could not start workers ({} of {} started): {}", workers.size(),
                                           ranks.size(), e.what());
        }
        ranks.resize(std::min(ranks.size(), workers.size()));  // metadata only for the ranks that ran
        stop_workers(workers);  // those started before a failed or interrupted launch
      }
      // A worker's detached leftovers (setsid daemons) came back to this agent: end them.
      for (pid_t pid : reap_adopted_since(spawned_since))
        std::fprintf(stderr, "commbench: ended process %d, which a worker of execution %d left running\n",
                     static_cast<int>(pid), exec.index);
      if (store_lost) throw LaunchError(*store_lost);
      observe.after_execution(exec, ranks, res);
      output_failed |= !reporter.output_failures().empty();
      if (output_failed) {
        stop_for_output = true;
        res.outcome.status = "interrupted";
        res.outcome.failed_rank = -1;
        res.outcome.reason = "the job stopped because results could not be written: " +
                             reporter.output_failures().front().message;
      }
      if (!group->solo()) {
        if (res.outcome.status != "ok" && res.outcome.failed_rank != -2)
          group->raise_abort(exec.index, fmt::format("stopped because rank {} failed: {}", group->rank(), res.outcome.reason));
        if (group->rank() == 0) {
          const auto others = group->gather_outcomes(exec.index, exec.world_size, Millis(10000));
          // A signal cut the wait short: those not heard from were not waited for, not lost.
          if (g_interrupt_signal.load() == 0)
            for (int k = 1; k < exec.world_size; ++k)
              if (!others[static_cast<size_t>(k)]) group->mark_gone(k, fmt::format("it never reported execution {}", exec.index));
          merge_outcomes(res.outcome, others, exec.world_size, g_interrupt_signal.load() != 0);
        } else {
          group->publish_outcome(exec.index, res.outcome);
        }
      }
      if (group->rank() == 0) group->clear_execution(exec.index);
      record_broken_case(exec, res, reporter);
      reporter.execution_done(res.outcome);
      interrupted = (res.outcome.status == "interrupted" && !stop_for_output) || g_interrupt_signal.load() != 0;
      run_records.insert(run_records.end(), res.cases.begin(), res.cases.end());
      result.cases.insert(result.cases.end(), res.cases.begin(), res.cases.end());
      result.records.insert(result.records.end(), res.records.begin(), res.records.end());
      result.executions.push_back(std::move(res.outcome));
    }
    reporter.run_done(run, run_records);
  }

  result.finished_at = iso_now();
  result.observability = observe.finish();
  const int code = job_exit_code(result, stop_for_output, interrupted);
  if (group->rank() == 0) return end_job_as_agent0(exp, plan, opts, job_dir, code, result, reporter, *group);
  return end_job_as_other_agent(code, interrupted, *group, execution_wait);
}

}  // namespace

int run_job(const Experiment& exp, const PluginCatalog& plugins, const JobOptions& opts) {
  install_signal_handlers();
  adopt_orphans();  // what a worker detaches (setsid) comes back to this agent (agent/orphan_reaper.h)
  const std::vector<Execution> plan = plan_job(exp);
  double longest_s = 60;
  for (const auto& e : plan) longest_s = std::max(longest_s, e.timeout_s);
  const Millis execution_wait(static_cast<int64_t>(longest_s * 1000) + 60000);

  AgentGroupOptions go;
  go.launch = opts.launch;
  const EnvMap env = current_environment();
  go.token = read_job_token(env);
  if (auto it = env.find("COMMBENCH_STORE_BIND"); it != env.end()) go.bind_host = it->second;
  if (auto it = env.find("COMMBENCH_RENDEZVOUS_TIMEOUT"); it != env.end()) {
    // The whole value: "10abc" is a typo, not 10 s.
    const std::string& text = it->second;
    double s = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), s);
    if (ec != std::errc() || end != text.data() + text.size() || !(s > 0) || s > 86400)
      throw LaunchConfigError("COMMBENCH_RENDEZVOUS_TIMEOUT=" + text +
                              " is not a number of seconds above 0 and at most 86400 (a day): set it to e.g. 300, or "
                              "unset it for the default (120)");
    go.join_timeout = Millis(static_cast<int64_t>(s * 1000));
  }
  // The workers choose their timer from it: a typo is a wrong launch, named before any starts.
  if (auto it = env.find("COMMBENCH_TIMER"); it != env.end()) {
    try {
      (void)HostTimer::choose(it->second.c_str());
    } catch (const std::exception& e) {
      throw LaunchConfigError(e.what());
    }
  }
  // A copied or fake /sys tree (docs/observability.md): one that is not there left the metadata,
  // telemetry and cpu_binding reading nothing, without a word.
  if (auto it = env.find("COMMBENCH_SYSFS_ROOT"); it != env.end() && !it->second.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(it->second, ec))
      throw LaunchConfigError("COMMBENCH_SYSFS_ROOT=" + it->second +
                              " is not a folder: the host metadata, telemetry and cpu_binding would read nothing. "
                              "Point it at a copied tree (its sys/ and proc/) or unset it to read this host's own");
  }
  // "{hardware}" names the folder after the GPU, driver and CUDA version (seed 003).
  const std::filesystem::path out_base =
      expand_hardware_placeholder(opts.output_dir.empty() ? exp.output_dir : opts.output_dir);
  if (auto it = env.find("COMMBENCH_RENDEZVOUS_FILE"); it != env.end()) go.rendezvous_file = it->second;
  else go.rendezvous_file = (out_base / fmt::format(".rendezvous-{}", opts.launch.job_id)).string();
  const auto group = AgentGroup::create(go);
  try {
    return run_with_agents(exp, plugins, opts, plan, env, out_base, execution_wait, group.get());
  } catch (const LaunchInterrupted&) {
    throw;  // announced where the signal was seen
  } catch (const LaunchError& e) {
    // Agent 0 names this task at once instead of waiting out its next step for it.
    group->announce_leaving({false, e.what()});
    throw;
  }
}

}  // namespace commbench
