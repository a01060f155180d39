#include "observe/thermal_warmup.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "device/nvml.h"
#include "observe/host_files.h"
#include "observe/telemetry_sampler.h"
#include "observe/telemetry_sources.h"

extern char** environ;

namespace commbench {
namespace {

using Clock = std::chrono::steady_clock;

// The load process; stopped by pid (SIGTERM, then SIGKILL) and reaped.
class Load {
 public:
  Load(const std::string& exe, bool gpus) {
    std::vector<std::string> args{exe, "__warm-load"};
    if (gpus) args.push_back("--gpus");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (::posix_spawn(&pid_, exe.c_str(), nullptr, nullptr, argv.data(), environ) != 0) pid_ = -1;
  }
  ~Load() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 200; ++i) {  // up to 2 s
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  bool started() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
};

}  // namespace

std::optional<double> device_temperature(bool gpus, std::string* why) {
  if (gpus) {
    std::string reason;
    const Nvml* nvml = Nvml::get(&reason);
    if (!nvml) {
      if (why) *why = "NVML: " + reason;
      return std::nullopt;
    }
    // The coolest GPU decides: every device must have reached the target.
    std::optional<double> coolest;
    for (unsigned i = 0; i < nvml->device_count(); ++i)
      if (auto t = nvml->read(i).temperature_c) coolest = coolest ? std::min(*coolest, *t) : *t;
    if (!coolest && why) *why = "NVML reports no GPU temperature";
    return coolest;
  }
  TelemetrySources sources(/*with_gpus=*/false);
  std::optional<double> hottest;
  for (const TelemetryRow& r : sources.read(unix_now_ns()))
    if (r.unit == "C") hottest = hottest ? std::max(*hottest, r.value) : r.value;
  if (!hottest && why) *why = "no CPU temperature sensor (hwmon, thermal zones)";
  return hottest;
}

nlohmann::json thermal_warmup(const ThermalWarmup& w, bool gpus, double idle_s, const std::string& self_exe,
                              const std::function<bool()>& stop) {
  const bool by_temperature = w.temperature_c > 0;
  std::string why;
  const auto start_temp = device_temperature(gpus, &why);
  nlohmann::json rec{{"devices", gpus ? "gpu" : "cpu"}, {"started_unix_ns", unix_now_ns()}};
  if (by_temperature) {
    rec["target_c"] = w.temperature_c;
    if (!start_temp) {
      rec["reached"] = false;
      rec["duration_s"] = 0;
      rec["reason"] = "no warm-up: " + why;
      return rec;
    }
    if (*start_temp >= w.temperature_c) return nullptr;  // already warm
  } else if (idle_s >= 0 && idle_s <= w.idle_s) {
    return nullptr;  // the previous execution kept the devices busy
  }
  if (start_temp) rec["start_c"] = *start_temp;
  rec["reason"] = by_temperature ? fmt::format("below {} C", w.temperature_c)
                                 : idle_s < 0 ? std::string("first execution")
                                              : fmt::format("idle for {:.1f} s", idle_s);
  const auto t0 = Clock::now();
  const double limit = by_temperature ? w.timeout_s : w.duration_s;
  bool reached = !by_temperature;
  {
    Load load(self_exe, gpus);
    if (!load.started()) rec["error"] = "could not start the load process";
    while (load.started() && !stop()) {
      const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
      if (by_temperature) {
        const auto t = device_temperature(gpus, nullptr);
        if (t && *t >= w.temperature_c) {
          reached = true;
          break;
        }
      }
      if (elapsed >= limit) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(250, static_cast<int64_t>((limit - elapsed) * 1000) + 1)));
    }
  }
  rec["duration_s"] = std::chrono::duration<double>(Clock::now() - t0).count();
  rec["reached"] = reached;
  if (auto t = device_temperature(gpus, nullptr)) rec["end_c"] = *t;
  return rec;
}

nlohmann::json idle_check(bool gpus) {
  nlohmann::json j{{"at_unix_ns", unix_now_ns()}};
  nlohmann::json warnings = nlohmann::json::array();
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  if (auto text = read_host_file("/proc/loadavg")) {
    double l1 = 0;
    if (std::istringstream(*text) >> l1) {
      j["load1"] = l1;
      j["logical_cpus"] = cpus;
      if (l1 > 0.5 * cpus)
        warnings.push_back(fmt::format("the CPUs are loaded: 1-minute load average {:.2f} on {} logical CPUs "
                                       "(other work competes with the benchmark)", l1, cpus));
    }
  }
  if (gpus)
    if (const Nvml* nvml = Nvml::get()) {
      nlohmann::json list = nlohmann::json::array();
      for (unsigned i = 0; i < nvml->device_count(); ++i) {
        const Nvml::Reading r = nvml->read(i);
        nlohmann::json g{{"index", i}};
        if (r.utilization_gpu_pct) g["utilization_pct"] = *r.utilization_gpu_pct;
        if (r.processes) g["processes"] = *r.processes;
        if (r.processes && *r.processes > 0)
          warnings.push_back(fmt::format("GPU {} is busy: {} other process(es) are running on it", i, *r.processes));
        else if (r.utilization_gpu_pct && *r.utilization_gpu_pct > 5)
          warnings.push_back(fmt::format("GPU {} is busy: {}% utilisation before the run", i, *r.utilization_gpu_pct));
        list.push_back(g);
      }
      j["gpus"] = list;
    }
  j["warnings"] = warnings;
  return j;
}

}  // namespace commbench
