// The agent's telemetry sampler: a thread that reads TelemetrySources every interval and appends
// the rows to telemetry.csv (long format: time_unix_ns,host,source,name,value,unit). It runs in
// the agent, never in the timed workers; it keeps the rows of the current execution in memory
// so that each case gets a summary of its window (summarize()).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "observe/telemetry_sources.h"

namespace commbench {

int64_t unix_now_ns();

class TelemetrySampler {
 public:
  // Creates (truncates) `csv` and writes its header. Sources are found here, once.
  TelemetrySampler(const std::filesystem::path& csv, std::string host);
  ~TelemetrySampler();

  // Starts sampling every `interval_s` (or changes the interval); takes one sample at once.
  void start(double interval_s);
  void stop();
  bool running() const { return thread_.joinable(); }

  // Summary of the rows stamped in [t0, t1] plus the last sample before t0 (the state the window
  // started in): temperature and clock ranges, throttling seen. Null when there are no rows.
  nlohmann::json summarize(int64_t t0_ns, int64_t t1_ns) const;
  // The most recent sample's rows (empty before the first).
  std::vector<TelemetryRow> latest() const;
  // Drops kept rows older than `t_ns` (the CSV keeps everything).
  void forget_before(int64_t t_ns);
  // For summary.json: file, interval, sources found, sources missing, rows written, write error.
  nlohmann::json describe() const;

 private:
  void loop();
  void sample();

  std::filesystem::path path_;
  std::string host_;
  std::FILE* file_ = nullptr;
  std::string write_error_;
  TelemetrySources sources_;
  double interval_s_ = 1;
  size_t rows_written_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<TelemetryRow> kept_;
  int64_t last_sample_ns_ = 0;
  std::thread thread_;
};

// The summary of a set of rows (telemetry_sampler.cpp; exposed for the thermal warm-up's report).
nlohmann::json summarize_rows(const std::vector<TelemetryRow>& rows);

}  // namespace commbench
