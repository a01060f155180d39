// A rank's trace (issue 13 §1): spans of its phases (init, rendezvous, check, warm-up, timed)
// and of every timed iteration or all_pairs transfer, as Chrome trace events (they open in
// Perfetto and chrome://tracing). Events are buffered in memory as fixed-size records and
// written after each case, never inside the timed region. Off (the default), every call
// returns at its first test and nothing is recorded.
//
// The file is the JSON Array Format ("[" event, event, ...), appended per case; the format allows
// the closing "]" to be missing, so a rank that dies mid-run still leaves a readable trace.
// Timestamps are this rank's timer (HostTimer::now_ns, its host's CLOCK_MONOTONIC); the agent's
// merge (report/trace_merge.h) moves them onto rank 0's timeline.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "measure/host_timer.h"

namespace commbench {

class LineFile;

enum class TracePhase : uint8_t { Init, Rendezvous, ClockSync, Check, WarmUp, Timed, Iteration, Transfer };
const char* trace_phase_name(TracePhase p);

class TraceRecorder {
 public:
  TraceRecorder();  // off
  // On: events of this rank go to `path` (created now; OutputError when it cannot be).
  TraceRecorder(const std::filesystem::path& path, int rank, int exec_index);
  ~TraceRecorder();
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  bool on() const { return on_; }
  int64_t now() const { return on_ ? timer_->now_ns() : 0; }

  // What the following spans belong to: a display name and the configuration as event args
  // (op, bytes, dtype, placement, ...). Call before the case's first span.
  void set_case(std::string name, nlohmann::json args) {
    if (on_) current_case_ = add_case(std::move(name), std::move(args));
  }
  // Spans from here on belong to the execution, not to the last case (its closing clock sync).
  void clear_case() { current_case_ = -1; }
  // A case to name in transfer() (all_pairs: one per size); -1 when off.
  int32_t add_case(std::string name, nlohmann::json args);
  void reserve(size_t more) {
    if (on_) events_.reserve(events_.size() + more);
  }
  void span(TracePhase phase, int64_t start_ns, int64_t end_ns, int32_t iteration = -1) {
    if (on_) events_.push_back({start_ns, end_ns, iteration, -1, -1, current_case_, phase});
  }
  // One all_pairs transfer src -> dst of case `case_index` (from add_case: the size).
  void transfer(TracePhase phase, int32_t case_index, int src, int dst, int32_t repetition, int64_t start_ns,
                int64_t end_ns) {
    if (on_) events_.push_back({start_ns, end_ns, repetition, src, dst, case_index, phase});
  }
  // Appends the buffered events to the file (after each case; never in the timed region).
  void flush();

 private:
  struct Event {
    int64_t start_ns, end_ns;
    int32_t iteration;  // or an all_pairs repetition; -1: none
    int32_t src, dst;   // all_pairs transfers; -1 otherwise
    int32_t case_index; // into cases_; -1: a job-level phase
    TracePhase phase;
  };
  struct Case {
    std::string name;
    nlohmann::json args;
  };
  bool on_ = false;
  const HostTimer* timer_ = nullptr;
  int rank_ = 0, exec_ = 0;
  std::vector<Event> events_;
  std::vector<Case> cases_;
  int32_t current_case_ = -1;
  std::unique_ptr<LineFile> file_;
  bool first_written_ = false;
};

// Records [construction, destruction) as one span when the recorder is on.
class TraceScope {
 public:
  TraceScope(TraceRecorder& r, TracePhase p) : r_(r), p_(p), start_(r.now()) {}
  ~TraceScope() {
    if (r_.on()) r_.span(p_, start_, r_.now());
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  TraceRecorder& r_;
  TracePhase p_;
  int64_t start_;
};

}  // namespace commbench
