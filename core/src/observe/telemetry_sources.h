// What the telemetry sampler reads (docs/observability.md, "Telemetry"): per-core CPU frequency
// (cpufreq) and thermal throttle counts, temperatures (hwmon, thermal zones), package power from
// powercap/RAPL energy counters, load and CPU busy time (/proc), NIC byte/packet counters, and
// per GPU through NVML temperature, power, SM/memory clocks, throttle reasons and utilisation.
// Sources are found once; those that are absent or unreadable are listed (missing()), never fatal.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace commbench {

// One value of the long-format telemetry.csv: time_unix_ns,host,source,name,value,unit.
struct TelemetryRow {
  int64_t time_unix_ns = 0;
  std::string source;  // "cpu3", "hwmon0/coretemp", "thermal_zone0/x86_pkg_temp", "powercap/package-0",
                       // "host", "net/eth0", "gpu0"
  std::string name;    // "frequency", "Package id 0", "temperature", "power", "load1", "rx_bytes", ...
  double value = 0;
  std::string unit;    // "MHz", "C", "W", "%", "B", "packets", "count", "bitmask", ""
};

// NVML's throttle reasons that mean the clocks were held down by power or heat (not idle, not an
// application clock setting): SwPowerCap, HwSlowdown, SwThermal, HwThermal, HwPowerBrake.
inline constexpr uint64_t kGpuThrottleMask = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

class TelemetrySources {
 public:
  explicit TelemetrySources(bool with_gpus = true);
  // One reading of every source found, stamped `now_ns`. Rates (RAPL power, CPU busy) need two
  // readings: the first one leaves them out.
  std::vector<TelemetryRow> read(int64_t now_ns);
  // "cpufreq: ... not found", one line per missing kind of source.
  const std::vector<std::string>& missing() const { return missing_; }
  // Kinds found, e.g. {"cpufreq": 8, "hwmon": 3, "nvml": 2} (how many sensors/devices).
  const std::map<std::string, int>& found() const { return found_; }

 private:
  struct File {
    std::string path, source, name, unit;
    double scale = 1;  // multiply the file's number by this
  };
  struct Energy {
    std::string path, source;
    double max_uj = 0, last_uj = -1;
    int64_t last_ns = 0;
  };
  void find_cpus();
  void find_hwmon();
  void find_thermal();
  void find_powercap();
  void find_net();
  void find_gpus();

  std::vector<File> files_;
  std::vector<Energy> energy_;
  bool proc_stat_ = false, loadavg_ = false;
  uint64_t last_busy_ = 0, last_total_ = 0;
  unsigned gpus_ = 0;
  std::vector<std::string> missing_;
  std::map<std::string, int> found_;
};

}  // namespace commbench
