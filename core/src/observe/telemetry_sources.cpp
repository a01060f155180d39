#include "observe/telemetry_sources.h"

#include <sstream>

#include <fmt/format.h>

#include "device/nvml.h"
#include "observe/host_files.h"

namespace commbench {
namespace {

bool starts_with(const std::string& s, std::string_view p) { return s.rfind(p, 0) == 0; }
bool ends_with(const std::string& s, std::string_view p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

}  // namespace

TelemetrySources::TelemetrySources(bool with_gpus) {
  find_cpus();
  find_hwmon();
  find_thermal();
  find_powercap();
  loadavg_ = read_host_file("/proc/loadavg").has_value();
  proc_stat_ = read_host_file("/proc/stat").has_value();
  if (!loadavg_ || !proc_stat_) missing_.push_back("load: /proc/loadavg or /proc/stat not readable");
  else found_["load"] = 1;
  find_net();
  if (with_gpus) find_gpus();
}

void TelemetrySources::find_cpus() {
  int freq = 0;
  for (const auto& cpu : list_host_dir("/sys/devices/system/cpu")) {
    if (!starts_with(cpu, "cpu") || cpu.size() == 3 || !std::isdigit(static_cast<unsigned char>(cpu[3]))) continue;
    const std::string dir = "/sys/devices/system/cpu/" + cpu;
    if (read_host_number(dir + "/cpufreq/scaling_cur_freq")) {
      files_.push_back({dir + "/cpufreq/scaling_cur_freq", cpu, "frequency", "MHz", 1e-3});  // kHz
      ++freq;
    }
    if (read_host_number(dir + "/thermal_throttle/core_throttle_count"))
      files_.push_back({dir + "/thermal_throttle/core_throttle_count", cpu, "throttle_count", "count", 1});
  }
  if (freq == 0) missing_.push_back("cpufreq: no /sys/devices/system/cpu/cpu*/cpufreq/scaling_cur_freq");
  else found_["cpufreq"] = freq;
}

void TelemetrySources::find_hwmon() {
  int n = 0;
  for (const auto& hw : list_host_dir("/sys/class/hwmon")) {
    const std::string dir = "/sys/class/hwmon/" + hw;
    const std::string chip = read_host_file(dir + "/name").value_or("unknown");
    for (const auto& f : list_host_dir(dir)) {
      if (!starts_with(f, "temp") || !ends_with(f, "_input")) continue;
      if (!read_host_number(dir + "/" + f)) continue;
      const std::string sensor = f.substr(0, f.size() - 6);  // temp1
      const std::string label = read_host_file(dir + "/" + sensor + "_label").value_or(sensor);
      files_.push_back({dir + "/" + f, hw + "/" + chip, label, "C", 1e-3});  // millidegrees
      ++n;
    }
  }
  if (n == 0) missing_.push_back("hwmon: no readable /sys/class/hwmon/hwmon*/temp*_input");
  else found_["hwmon"] = n;
}

void TelemetrySources::find_thermal() {
  int n = 0;
  for (const auto& z : list_host_dir("/sys/class/thermal")) {
    if (!starts_with(z, "thermal_zone")) continue;
    const std::string dir = "/sys/class/thermal/" + z;
    if (!read_host_number(dir + "/temp")) continue;
    const std::string type = read_host_file(dir + "/type").value_or("unknown");
    files_.push_back({dir + "/temp", z + "/" + type, "temperature", "C", 1e-3});
    ++n;
  }
  if (n == 0) missing_.push_back("thermal: no readable /sys/class/thermal/thermal_zone*/temp");
  else found_["thermal"] = n;
}

// Package and DRAM energy in microjoules; power is the difference over time. energy_uj is often
// readable by root only (a side channel): unreadable is listed as missing, like absent.
void TelemetrySources::find_powercap() {
  for (const auto& d : list_host_dir("/sys/class/powercap")) {
    const std::string dir = "/sys/class/powercap/" + d;
    if (!read_host_number(dir + "/energy_uj")) continue;
    Energy e;
    e.path = dir + "/energy_uj";
    e.source = "powercap/" + read_host_file(dir + "/name").value_or(d);
    e.max_uj = read_host_number(dir + "/max_energy_range_uj").value_or(0);
    energy_.push_back(e);
  }
  if (energy_.empty()) missing_.push_back("powercap: no readable /sys/class/powercap/*/energy_uj (RAPL absent or root-only)");
  else found_["powercap"] = static_cast<int>(energy_.size());
}

void TelemetrySources::find_net() {
  int n = 0;
  for (const auto& nic : list_host_dir("/sys/class/net")) {
    const std::string dir = "/sys/class/net/" + nic + "/statistics/";
    if (!read_host_number(dir + "rx_bytes")) continue;
    for (const char* c : {"rx_bytes", "tx_bytes"}) files_.push_back({dir + c, "net/" + nic, c, "B", 1});
    for (const char* c : {"rx_packets", "tx_packets"}) files_.push_back({dir + c, "net/" + nic, c, "packets", 1});
    ++n;
  }
  if (n == 0) missing_.push_back("net: no /sys/class/net/*/statistics");
  else found_["net"] = n;
}

void TelemetrySources::find_gpus() {
  std::string why;
  const Nvml* nvml = Nvml::get(&why);
  if (!nvml) {
    missing_.push_back("nvml: " + why);
    return;
  }
  gpus_ = nvml->device_count();
  if (gpus_ == 0) missing_.push_back("nvml: no GPUs");
  else found_["nvml"] = static_cast<int>(gpus_);
}

std::vector<TelemetryRow> TelemetrySources::read(int64_t now_ns) {
  std::vector<TelemetryRow> rows;
  auto add = [&](const std::string& source, const std::string& name, double v, const char* unit) {
    rows.push_back({now_ns, source, name, v, unit});
  };
  for (const File& f : files_)
    if (auto v = read_host_number(f.path)) rows.push_back({now_ns, f.source, f.name, *v * f.scale, f.unit});
  for (Energy& e : energy_) {
    const auto uj = read_host_number(e.path);
    if (!uj) continue;
    if (e.last_uj >= 0 && now_ns > e.last_ns) {
      double delta = *uj - e.last_uj;
      if (delta < 0 && e.max_uj > 0) delta += e.max_uj;  // the counter wrapped
      if (delta >= 0) add(e.source, "power", delta * 1e-6 / ((now_ns - e.last_ns) * 1e-9), "W");
    }
    e.last_uj = *uj;
    e.last_ns = now_ns;
  }
  if (loadavg_)
    if (auto text = read_host_file("/proc/loadavg")) {
      double l1 = 0;
      if (std::istringstream(*text) >> l1) add("host", "load1", l1, "");
    }
  if (proc_stat_)
    if (auto text = read_host_file("/proc/stat")) {
      std::istringstream in(*text);
      std::string cpu;
      uint64_t v[8] = {0};
      if (in >> cpu >> v[0] >> v[1] >> v[2] >> v[3] >> v[4] >> v[5] >> v[6] >> v[7] && cpu == "cpu") {
        const uint64_t idle = v[3] + v[4], total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
        const uint64_t busy = total - idle;
        if (last_total_ > 0 && total > last_total_)
          add("host", "cpu_busy", 100.0 * (busy - last_busy_) / (total - last_total_), "%");
        last_busy_ = busy;
        last_total_ = total;
      }
    }
  if (gpus_ > 0)
    if (const Nvml* nvml = Nvml::get()) {
      for (unsigned i = 0; i < gpus_; ++i) {
        const Nvml::Reading r = nvml->read(i);
        const std::string src = fmt::format("gpu{}", i);
        if (r.temperature_c) add(src, "temperature", *r.temperature_c, "C");
        if (r.power_w) add(src, "power", *r.power_w, "W");
        if (r.sm_clock_mhz) add(src, "sm_clock", *r.sm_clock_mhz, "MHz");
        if (r.memory_clock_mhz) add(src, "memory_clock", *r.memory_clock_mhz, "MHz");
        if (r.throttle_reasons) add(src, "throttle_reasons", static_cast<double>(*r.throttle_reasons), "bitmask");
        if (r.utilization_gpu_pct) add(src, "utilization", *r.utilization_gpu_pct, "%");
        if (r.utilization_memory_pct) add(src, "memory_utilization", *r.utilization_memory_pct, "%");
      }
    }
  return rows;
}

}  // namespace commbench
