#include "measure/trace_recorder.h"

#include <fmt/format.h>

#include "report/output_file.h"

namespace commbench {

const char* trace_phase_name(TracePhase p) {
  switch (p) {
    case TracePhase::Init: return "init";
    case TracePhase::Rendezvous: return "rendezvous";
    case TracePhase::ClockSync: return "clock sync";
    case TracePhase::Check: return "check";
    case TracePhase::WarmUp: return "warm-up";
    case TracePhase::Timed: return "timed";
    case TracePhase::Iteration: return "iteration";
    case TracePhase::Transfer: return "transfer";
  }
  return "?";
}

TraceRecorder::TraceRecorder() = default;

TraceRecorder::TraceRecorder(const std::filesystem::path& path, int rank, int exec_index)
    : on_(true), timer_(&HostTimer::get()), rank_(rank), exec_(exec_index) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) throw_output_error(path.parent_path(), ec.value(), "create the trace folder");
  file_ = std::make_unique<LineFile>(path);
  file_->write_line("[");
  events_.reserve(1024);
}

TraceRecorder::~TraceRecorder() {
  if (!on_) return;
  try {
    flush();
    file_->write_line("]");
  } catch (...) {}  // the array's end is optional: readers accept the file without it
}

int32_t TraceRecorder::add_case(std::string name, nlohmann::json args) {
  if (!on_) return -1;
  cases_.push_back({std::move(name), std::move(args)});
  return static_cast<int32_t>(cases_.size() - 1);
}

void TraceRecorder::flush() {
  if (!on_ || events_.empty()) return;
  std::string block;
  for (const Event& e : events_) {
    nlohmann::json args = e.case_index >= 0 ? cases_[static_cast<size_t>(e.case_index)].args : nlohmann::json::object();
    const std::string phase = trace_phase_name(e.phase);
    args["phase"] = e.phase == TracePhase::Iteration ? "timed" : phase;
    args["exec"] = exec_;
    std::string name = e.case_index >= 0 ? cases_[static_cast<size_t>(e.case_index)].name : phase;
    if (e.src >= 0) {
      args["src"] = e.src;
      args["dst"] = e.dst;
      args["repetition"] = e.iteration;
      name = fmt::format("{} {}\u2192{} {}", name, e.src, e.dst, phase);  // "all_pairs 64 KiB 0→1 timed"
      args["phase"] = e.phase == TracePhase::Transfer ? "timed" : phase;
    } else if (e.phase == TracePhase::Iteration) {
      args["iteration"] = e.iteration;
      name = fmt::format("{} #{}", name, e.iteration);
    } else if (e.case_index >= 0) {
      name = fmt::format("{} {}", name, phase);
    }
    const nlohmann::json ev{{"name", name},
                            {"cat", args["phase"]},
                            {"ph", "X"},
                            {"ts", static_cast<double>(e.start_ns) / 1e3},
                            {"dur", static_cast<double>(e.end_ns - e.start_ns) / 1e3},
                            {"pid", rank_},
                            {"tid", 0},
                            {"args", std::move(args)}};
    block += first_written_ || !block.empty() ? ",\n" : "";
    block += ev.dump();
  }
  file_->write_line(block);
  first_written_ = true;
  events_.clear();
}

}  // namespace commbench
