#include "observe/telemetry_sampler.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "common/csv_field.h"

namespace commbench {
namespace {

struct Range {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  void add(double v) { lo = std::min(lo, v); hi = std::max(hi, v); }
  bool empty() const { return lo > hi; }
  nlohmann::json json() const { return {{"min", lo}, {"max", hi}}; }
};

bool is_gpu(const std::string& source) { return source.rfind("gpu", 0) == 0; }

}  // namespace

int64_t unix_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch()).count();
}

nlohmann::json summarize_rows(const std::vector<TelemetryRow>& rows) {
  if (rows.empty()) return nullptr;
  Range cpu_temp, gpu_temp, cpu_freq, gpu_sm, gpu_mem, gpu_power, load;
  uint64_t reasons = 0;
  bool reasons_seen = false;  // a 0 must mean "NVML said none", not "no NVML"
  std::set<int64_t> times;
  std::map<std::string, Range> throttle_counts;  // per cpu: first and last count
  for (const TelemetryRow& r : rows) {
    times.insert(r.time_unix_ns);
    const bool gpu = is_gpu(r.source);
    if (r.unit == "C") (gpu ? gpu_temp : cpu_temp).add(r.value);
    else if (!gpu && r.name == "frequency") cpu_freq.add(r.value);
    else if (!gpu && r.name == "throttle_count") throttle_counts[r.source].add(r.value);
    else if (r.name == "load1") load.add(r.value);
    else if (gpu && r.name == "sm_clock") gpu_sm.add(r.value);
    else if (gpu && r.name == "memory_clock") gpu_mem.add(r.value);
    else if (gpu && r.name == "power") gpu_power.add(r.value);
    else if (gpu && r.name == "throttle_reasons") {
      reasons |= static_cast<uint64_t>(r.value);
      reasons_seen = true;
    }
  }
  nlohmann::json j{{"samples", times.size()}};
  auto put = [&](const char* key, const Range& r) {
    if (!r.empty()) j[key] = r.json();
  };
  put("cpu_temperature_c", cpu_temp);
  put("cpu_frequency_mhz", cpu_freq);
  put("load1", load);
  put("gpu_temperature_c", gpu_temp);
  put("gpu_sm_clock_mhz", gpu_sm);
  put("gpu_memory_clock_mhz", gpu_mem);
  put("gpu_power_w", gpu_power);
  double cpu_events = 0;
  for (const auto& [cpu, r] : throttle_counts) cpu_events += r.hi - r.lo;
  if (!throttle_counts.empty()) j["cpu_throttle_events"] = cpu_events;
  if (reasons_seen) j["gpu_throttle_reasons"] = reasons;
  j["throttled"] = cpu_events > 0 || (reasons & kGpuThrottleMask) != 0;
  return j;
}

TelemetrySampler::TelemetrySampler(const std::filesystem::path& csv, std::string host)
    : path_(csv), host_(std::move(host)) {
  file_ = std::fopen(csv.c_str(), "w");
  if (!file_) {
    write_error_ = fmt::format("cannot create {}: {}", csv.string(), std::strerror(errno));
    return;
  }
  std::fputs("time_unix_ns,host,source,name,value,unit\n", file_);
  std::fflush(file_);
}

TelemetrySampler::~TelemetrySampler() {
  stop();
  if (file_) std::fclose(file_);
}

void TelemetrySampler::start(double interval_s) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    interval_s_ = interval_s;
    stop_ = false;
  }
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  else cv_.notify_all();
}

void TelemetrySampler::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void TelemetrySampler::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    sample();
    lock.lock();
    cv_.wait_for(lock, std::chrono::duration<double>(interval_s_), [this] { return stop_; });
  }
}

// Reading sysfs and NVML happens outside the lock; only the append is inside.
void TelemetrySampler::sample() {
  const int64_t now = unix_now_ns();
  std::vector<TelemetryRow> rows = sources_.read(now);
  std::string text;
  for (const TelemetryRow& r : rows)
    text += fmt::format("{},{},{},{},{},{}\n", r.time_unix_ns, csv_field(host_), csv_field(r.source),
                        csv_field(r.name), r.value, r.unit);
  std::lock_guard<std::mutex> lock(mu_);
  if (file_ && write_error_.empty()) {
    if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0)
      write_error_ = fmt::format("writing {}: {}", path_.string(), std::strerror(errno));
    else
      rows_written_ += rows.size();
  }
  last_sample_ns_ = now;
  kept_.insert(kept_.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
}

nlohmann::json TelemetrySampler::summarize(int64_t t0_ns, int64_t t1_ns) const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t before = std::numeric_limits<int64_t>::min();
  for (const TelemetryRow& r : kept_)
    if (r.time_unix_ns < t0_ns) before = std::max(before, r.time_unix_ns);
  std::vector<TelemetryRow> window;
  for (const TelemetryRow& r : kept_)
    if (r.time_unix_ns == before || (r.time_unix_ns >= t0_ns && r.time_unix_ns <= t1_ns)) window.push_back(r);
  return summarize_rows(window);
}

std::vector<TelemetryRow> TelemetrySampler::latest() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TelemetryRow> out;
  for (const TelemetryRow& r : kept_)
    if (r.time_unix_ns == last_sample_ns_) out.push_back(r);
  return out;
}

void TelemetrySampler::forget_before(int64_t t_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  // Keep the last sample before t_ns: it is the state the next window starts in.
  int64_t keep_from = std::numeric_limits<int64_t>::min();
  for (const TelemetryRow& r : kept_)
    if (r.time_unix_ns < t_ns) keep_from = std::max(keep_from, r.time_unix_ns);
  std::erase_if(kept_, [&](const TelemetryRow& r) { return r.time_unix_ns < keep_from; });
}

nlohmann::json TelemetrySampler::describe() const {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json j{{"file", path_.filename().string()}, {"interval_s", interval_s_},
                   {"sources", sources_.found()}, {"missing", sources_.missing()},
                   {"rows", rows_written_}};
  if (!write_error_.empty()) j["error"] = write_error_;
  return j;
}

}  // namespace commbench
