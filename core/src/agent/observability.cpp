#include "agent/observability.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "observe/host_metadata.h"
#include "observe/profiler_command.h"
#include "observe/thermal_warmup.h"
#include "report/output_file.h"

extern char** environ;

namespace commbench {
namespace {

double steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::map<std::string, std::string> process_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

}  // namespace

JobObservability::JobObservability(const Experiment& exp, std::filesystem::path job_dir, int agent_rank,
                                   std::string self_exe)
    : exp_(exp), job_dir_(std::move(job_dir)), agent_rank_(agent_rank), self_exe_(std::move(self_exe)) {
  char h[256] = {0};
  ::gethostname(h, sizeof(h) - 1);
  host_ = h;
  host_facts_ = host_facts();
  build_id_ = executable_build_id();
  experiment_sha256_ = exp.text_sha256.empty() ? sha256_of_file(exp.file) : exp.text_sha256;
}

JobObservability::~JobObservability() {
  if (sampler_) sampler_->stop();
}

void JobObservability::before_execution(const Execution& exec, const RunSpec& run,
                                        const std::function<bool()>& stop) {
  const bool gpus = run.memory == CB_MEM_CUDA;
  if (run.telemetry_s > 0) {
    if (!sampler_) {
      const std::string name = agent_rank_ == 0 ? "telemetry.csv" : fmt::format("telemetry-agent{}.csv", agent_rank_);
      sampler_ = std::make_unique<TelemetrySampler>(job_dir_ / name, host_);
      const nlohmann::json d = sampler_->describe();
      for (const auto& m : d["missing"])
        std::fprintf(stderr, "commbench run: telemetry source missing (not fatal): %s\n", m.get<std::string>().c_str());
    }
    sampler_->start(run.telemetry_s);
  } else if (sampler_) {
    sampler_->stop();
  }
  if ((run.telemetry_s > 0 || run.thermal_warmup) && last_run_checked_ != run.index) {
    last_run_checked_ = run.index;
    nlohmann::json check = idle_check(gpus);
    check["run"] = run.name;
    check["host"] = host_;
    for (const auto& w : check["warnings"])
      std::fprintf(stderr, "commbench run: warning before run '%s': %s\n", run.name.c_str(), w.get<std::string>().c_str());
    idle_checks_.push_back(check);
  }
  if (run.thermal_warmup) {
    const double idle = last_exec_end_ < 0 ? -1 : steady_s() - last_exec_end_;
    nlohmann::json rec = thermal_warmup(*run.thermal_warmup, gpus, idle, self_exe_, stop);
    if (!rec.is_null()) {
      rec["execution"] = exec.index;
      rec["run"] = run.name;
      rec["host"] = host_;
      if (!rec.value("reached", true))
        std::fprintf(stderr, "commbench run: thermal warm-up did not reach %g C (%s)\n",
                     rec.value("target_c", 0.0), rec.value("reason", "").c_str());
      warmups_.push_back(rec);
    }
  }
  exec_started_ns_ = unix_now_ns();
  profiled_.clear();
}

void JobObservability::wrap_worker(const Execution& exec, const RunSpec& run, int rank, WorkerLaunch& l) {
  if (!run.profiler || !run.profiler->wraps(rank)) return;
  // Checked at validation too; the program may have gone since (another host, PATH changed).
  if (auto why = profiler_problem(*run.profiler)) throw std::runtime_error(*why);
  std::filesystem::path out = l.log_path;
  out.replace_extension();  // logs/exec0-gloo-w4-rank0
  std::vector<std::string> worker{l.exe};
  worker.insert(worker.end(), l.args.begin(), l.args.end());
  worker.push_back("--wrapped");
  l.wrapped_argv = profiler_argv(*run.profiler, out.string(), rank, worker);
  const std::string command = shell_quote_join(l.wrapped_argv);
  // The exact command heads the rank's log too.
  if (std::FILE* f = std::fopen(l.log_path.c_str(), "a")) {
    std::fprintf(f, "commbench: worker started under the profiler: %s\n", command.c_str());
    std::fclose(f);
  }
  profiled_[rank] = {{"tool", run.profiler->tool}, {"command", command},
                     {"output", std::filesystem::relative(out, job_dir_).string()}};
  profiler_used_ = true;
  (void)exec;
}

CaseAnnotator JobObservability::annotator() {
  if (!sampler_ || !sampler_->running()) return {};
  return [this](CaseRecord& rec, int64_t t0, int64_t t1) { rec.telemetry = sampler_->summarize(t0, t1); };
}

void JobObservability::after_execution(const Execution& exec, const std::vector<int>& ranks, ExecutionResult& res) {
  last_exec_end_ = steady_s();
  if (sampler_) sampler_->forget_before(unix_now_ns());
  for (const auto& [rank, p] : profiled_) res.outcome.metadata["profiler"][std::to_string(rank)] = p;

  const auto env = process_environment();
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int rank = ranks[i];
    nlohmann::json& file = rank_files_[rank];
    if (file.is_null()) {
      file = {{"rank", rank},
              {"host", host_facts_},
              {"commbench", {{"version", COMMBENCH_VERSION}, {"build_id", build_id_}}},
              {"experiment", {{"file", exp_.file}, {"sha256", experiment_sha256_}}},
              {"executions", nlohmann::json::array()}};
    }
    std::map<std::string, std::string> worker_env = env;
    for (const auto& [k, v] : exec.env) worker_env[k] = v;
    nlohmann::json e{{"execution", exec.index}, {"run", exec.run}, {"backend", exec.backend},
                     {"world_size", exec.world_size}, {"status", res.outcome.status},
                     {"environment", environment_by_prefix(worker_env)}};
    const auto& meta = res.outcome.metadata;
    if (meta.contains("ranks") && meta["ranks"].contains(std::to_string(rank))) {
      const auto& m = meta["ranks"][std::to_string(rank)];
      for (const char* k : {"binding", "bootstrap", "gpu", "gpu_topology", "pid", "timer"})
        if (m.contains(k)) e[k] = m[k];
      // What the plugin reports about itself: library versions, transport, device.
      if (m.contains("backend")) e["library_versions"] = m["backend"];
    }
    if (auto it = profiled_.find(rank); it != profiled_.end()) e["profiler"] = it->second;
    file["executions"].push_back(e);
    std::error_code ec;
    std::filesystem::create_directories(job_dir_ / "metadata", ec);
    try {
      write_file_atomically(job_dir_ / "metadata" / fmt::format("rank{}.json", rank), file.dump(2) + "\n");
    } catch (const std::exception& ex) {
      std::fprintf(stderr, "commbench run: metadata for rank %d not written: %s\n", rank, ex.what());
    }
  }
}

nlohmann::json JobObservability::finish() {
  nlohmann::json j;
  if (sampler_) {
    sampler_->stop();
    j["telemetry"] = sampler_->describe();
  }
  if (!warmups_.empty()) j["thermal_warmups"] = warmups_;
  if (!idle_checks_.empty()) j["idle_checks"] = idle_checks_;
  if (profiler_used_) j["profiler"] = "commands and outputs per execution: executions[].metadata.profiler";
  nlohmann::json files = nlohmann::json::array();
  for (const auto& [rank, f] : rank_files_) files.push_back(fmt::format("metadata/rank{}.json", rank));
  j["metadata"] = {{"files", files},
                   {"commbench_build_id", build_id_},
                   {"experiment_sha256", experiment_sha256_},
                   {"hosts", {{host_, host_digest(host_facts_)}}}};
  const std::string hw = hardware_folder_name(host_facts_);
  if (!hw.empty()) j["metadata"]["hardware_name"] = hw;
  return j;
}

}  // namespace commbench
