#include "report/trace_merge.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "common/json_nesting.h"
#include "report/clock_alignment.h"
#include "report/output_file.h"

namespace commbench {
namespace {

// Telemetry tracks get process ids after every rank's.
constexpr int kTelemetryPid = 1000000;
// Ranks looked for per execution: a world size read back from a damaged results.jsonl must not
// turn into a billion file lookups.
constexpr int kMaxTracedRanks = 1 << 16;

int ranks_to_look_for(const ExecutionOutcome& o) { return std::clamp(o.info.world_size, 0, kMaxTracedRanks); }

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The JSON Array Format as the ranks write it, read event by event: the closing "]" may be
// missing (a rank that died), a rank killed mid-write leaves its last event cut off, and a
// damaged or hostile file may hold anything. Every complete event is kept; what could not be
// read is described in `damage` ("" when nothing was lost).
struct RankFile {
  std::vector<nlohmann::json> events;
  std::string damage;
};

RankFile read_rank_file(std::string_view text) {
  RankFile out;
  size_t i = text.find_first_not_of(" \t\r\n");
  if (i == std::string_view::npos) return out;  // an empty file: the rank never traced
  if (text[i] != '[') {
    out.damage = "not a JSON array (it does not start with '['): nothing read";
    return out;
  }
  ++i;
  size_t malformed = 0;
  for (;;) {
    i = text.find_first_not_of(" \t\r\n,", i);
    if (i == std::string_view::npos || text[i] == ']') break;  // complete, or its "]" never written
    const JsonExtent e = json_value_extent(text.substr(i));
    if (e.end == JsonExtent::End::TooDeep) {
      out.damage = fmt::format("nested deeper than {} levels at byte {}: the remaining {} bytes were not read",
                               kMaxJsonNesting, i + e.length, text.size() - i);
      break;
    }
    if (e.end == JsonExtent::End::Truncated) {
      out.damage = fmt::format("cut off in the middle of an event (its last {} bytes, at byte {}, are not a whole "
                               "event: the rank was killed while writing, or the file was truncated)",
                               text.size() - i, i);
      break;
    }
    nlohmann::json ev = nlohmann::json::parse(text.substr(i, e.length), nullptr, false);
    if (ev.is_discarded()) ++malformed;
    else out.events.push_back(std::move(ev));
    i += std::max<size_t>(e.length, 1);
  }
  if (malformed > 0)
    out.damage += fmt::format("{}{} malformed event(s) skipped", out.damage.empty() ? "" : "; ", malformed);
  return out;
}

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> f;
  std::string cur;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) f.push_back(std::move(cur)), cur.clear();
    else cur += c;
  }
  f.push_back(cur);
  return f;
}

// telemetry.csv (long format: time_unix_ns,host,source,name,value,unit) as counter events.
int add_telemetry(const std::filesystem::path& csv, const std::vector<ClockAlignment>& clocks,
                  nlohmann::json& events, nlohmann::json& meta) {
  std::ifstream in(csv);
  if (!in) return 0;
  std::string line;
  if (!std::getline(in, line)) return 0;
  const auto header = split_csv(line);
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  for (const char* need : {"time_unix_ns", "host", "source", "name", "value"})
    if (!col.count(need)) {
      meta["telemetry"] = fmt::format("telemetry.csv has no column '{}': not merged", need);
      return 0;
    }
  std::map<std::string, int> host_pid;
  std::set<std::string> unaligned;
  int n = 0;
  while (std::getline(in, line)) {
    const auto f = split_csv(line);
    if (f.size() < header.size()) continue;
    int64_t unix_ns = 0;
    double value = 0;
    try {
      unix_ns = std::stoll(f[col["time_unix_ns"]]);
      value = std::stod(f[col["value"]]);
    } catch (const std::exception&) {
      continue;  // a non-numeric value (a throttle reason's text) has no counter
    }
    const std::string& host = f[col["host"]];
    std::optional<int64_t> t;
    for (const ClockAlignment& c : clocks)
      if ((t = c.unix_to_rank0(host, unix_ns))) break;
    if (!t) {
      unaligned.insert(host);
      continue;
    }
    auto [it, fresh] = host_pid.emplace(host, kTelemetryPid + static_cast<int>(host_pid.size()));
    if (fresh)
      events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", it->second},
                        {"args", {{"name", "telemetry " + host}}}});
    std::string name = f[col["source"]] + " " + f[col["name"]];
    if (col.count("unit") && !f[col["unit"]].empty()) name += " (" + f[col["unit"]] + ")";
    events.push_back({{"name", name}, {"ph", "C"}, {"ts", static_cast<double>(*t) / 1e3}, {"pid", it->second},
                      {"args", {{"value", value}}}});
    ++n;
  }
  if (!unaligned.empty())
    meta["telemetry_unaligned_hosts"] = std::vector<std::string>(unaligned.begin(), unaligned.end());
  return n;
}

}  // namespace

std::filesystem::path rank_trace_path(const std::filesystem::path& job_dir, int exec_index, int rank) {
  return job_dir / "trace" / fmt::format("exec{}-rank{}.json", exec_index, rank);
}

TraceMergeSummary merge_job_trace(const std::filesystem::path& job_dir,
                                  const std::vector<ExecutionOutcome>& executions,
                                  const std::vector<int>& traced) {
  TraceMergeSummary sum;
  nlohmann::json events = nlohmann::json::array();
  nlohmann::json meta{{"timeline", "rank 0's timer in microseconds (its host's CLOCK_MONOTONIC); each "
                                   "rank's events moved by its clock offset and drift to rank 0"}};
  std::vector<ClockAlignment> clocks;
  std::map<int, std::string> rank_host;
  for (const ExecutionOutcome& o : executions) {
    const int e = o.info.exec_index;
    if (std::find(traced.begin(), traced.end(), e) == traced.end()) continue;
    const ClockAlignment clock(o.clock);
    clocks.push_back(clock);
    if (o.clock.is_object())
      for (const auto& r : o.clock.value("ranks", nlohmann::json::array()))
        rank_host.emplace(r.value("rank", 0), r.value("host", ""));
    for (int r = 0; r < ranks_to_look_for(o); ++r) {
      const auto path = rank_trace_path(job_dir, e, r);
      std::error_code ec;
      if (!std::filesystem::exists(path, ec)) {
        sum.missing.push_back(fmt::format("exec {} rank {}", e, r));
        continue;
      }
      ++sum.files;
      if (!clock.known(r)) meta["unaligned"].push_back(fmt::format("exec {} rank {}", e, r));
      RankFile file = read_rank_file(read_all(path));
      size_t skipped = 0;
      for (nlohmann::json& ev : file.events) {
        if (!ev.is_object() || !ev.contains("ts") || !ev["ts"].is_number()) {
          ++skipped;
          continue;
        }
        const double ts_us = ev["ts"].get<double>();
        const auto local_ns = std::llround(ts_us * 1e3);
        const int64_t start = clock.to_rank0(r, local_ns);
        ev["ts"] = static_cast<double>(start) / 1e3;
        // The end goes through the same mapping as the start: moving the start alone (drift)
        // made back-to-back slices overlap by nanoseconds and broke their nesting in viewers.
        if (ev.contains("dur") && ev["dur"].is_number()) {
          const int64_t end = clock.to_rank0(r, std::llround((ts_us + ev["dur"].get<double>()) * 1e3));
          ev["dur"] = static_cast<double>(std::max<int64_t>(end - start, 0)) / 1e3;
        }
        events.push_back(std::move(ev));
        ++sum.events;
      }
      if (skipped > 0)
        file.damage += fmt::format("{}{} event(s) without a numeric \"ts\" skipped", file.damage.empty() ? "" : "; ",
                                   skipped);
      if (!file.damage.empty()) {
        const std::string where = fmt::format("{}: {} event(s) read; {}", path.filename().string(), file.events.size() - skipped,
                                              file.damage);
        sum.damaged.push_back(where);
        meta["damaged"].push_back(where);
      }
    }
  }
  for (const auto& [r, host] : rank_host)
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", r},
                      {"args", {{"name", fmt::format("rank {} ({})", r, host)}}}});
  sum.counter_samples = add_telemetry(job_dir / "telemetry.csv", clocks, events, meta);
  if (!sum.missing.empty()) meta["missing"] = sum.missing;
  const nlohmann::json doc{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"}, {"metadata", meta}};
  write_file_atomically(job_dir / TraceMergeReporter::kFileName, doc.dump());
  return sum;
}

std::vector<ExecutionOutcome> executions_without_record(const std::filesystem::path& job_dir,
                                                        const std::vector<ExecutionOutcome>& executions) {
  std::set<int> recorded;
  for (const ExecutionOutcome& o : executions) recorded.insert(o.info.exec_index);
  std::map<int, int> ranks;  // execution -> highest rank file
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(job_dir / "trace", ec)) {
    int e = -1, r = -1, used = 0;
    const std::string name = entry.path().filename().string();
    if (std::sscanf(name.c_str(), "exec%d-rank%d.json%n", &e, &r, &used) != 2 || used != static_cast<int>(name.size()) ||
        e < 0 || r < 0 || r >= kMaxTracedRanks || recorded.count(e))
      continue;
    ranks[e] = std::max(ranks[e], r);
  }
  std::vector<ExecutionOutcome> out;
  for (const auto& [e, highest] : ranks) {
    ExecutionOutcome o;
    o.info.exec_index = e;
    o.info.world_size = highest + 1;
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<int> traced_executions(const std::filesystem::path& job_dir, const std::vector<ExecutionOutcome>& executions) {
  std::vector<int> traced;
  for (const ExecutionOutcome& o : executions)
    for (int r = 0; r < ranks_to_look_for(o); ++r) {
      std::error_code ec;
      if (std::filesystem::exists(rank_trace_path(job_dir, o.info.exec_index, r), ec)) {
        traced.push_back(o.info.exec_index);
        break;
      }
    }
  return traced;
}

void TraceMergeReporter::job_done(const JobResult& result) {
  const std::vector<int> traced = traced_executions(dir_, result.executions);
  if (traced.empty()) return;
  try {
    const TraceMergeSummary s = merge_job_trace(dir_, result.executions, traced);
    if (!s.missing.empty())
      std::fprintf(stderr, "commbench: trace.json lacks %zu rank trace(s) not found under %s (e.g. %s): ranks on other "
                   "hosts write theirs to their own job folder unless it is shared\n",
                   s.missing.size(), (dir_ / "trace").c_str(), s.missing.front().c_str());
    for (const std::string& d : s.damaged) std::fprintf(stderr, "commbench: trace.json: %s\n", d.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "commbench: could not write %s: %s; the ranks' files under %s remain\n",
                 (dir_ / kFileName).c_str(), e.what(), (dir_ / "trace").c_str());
  }
}

}  // namespace commbench
