#include "measure/trace_recorder.h"

#include <iterator>
#include <string_view>

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

// Formatted by hand: per event only numbers change, and the case's name and args are escaped
// once per case (a JSON object per event made the writing ~20x slower).
void TraceRecorder::flush() {
  if (!on_ || events_.empty()) return;
  std::vector<std::string> quoted_names(cases_.size()), args_bodies(cases_.size());
  std::vector<bool> done(cases_.size(), false);
  std::string block;
  block.reserve(events_.size() * 320);
  for (const Event& e : events_) {
    std::string_view name_q = "", args_body = "";
    if (e.case_index >= 0) {
      const auto k = static_cast<size_t>(e.case_index);
      if (!done[k]) {
        quoted_names[k] = nlohmann::json(cases_[k].name).dump();
        quoted_names[k].pop_back();  // open: the phase or iteration is appended
        const std::string a = cases_[k].args.dump();
        args_bodies[k] = a.size() > 2 ? a.substr(1, a.size() - 2) + "," : "";
        done[k] = true;
      }
      name_q = quoted_names[k];
      args_body = args_bodies[k];
    }
    const char* phase = trace_phase_name(e.phase);
    const char* cat = e.phase == TracePhase::Iteration || e.phase == TracePhase::Transfer ? "timed" : phase;
    std::string name, extra;
    if (e.src >= 0) {
      name = fmt::format("{} {}\u2192{} {}\"", name_q, e.src, e.dst, phase);  // "all_pairs 64 B 0→1 transfer"
      extra = fmt::format(",\"src\":{},\"dst\":{},\"repetition\":{}", e.src, e.dst, e.iteration);
    } else if (e.phase == TracePhase::Iteration) {
      name = fmt::format("{} #{}\"", name_q, e.iteration);
      extra = fmt::format(",\"iteration\":{}", e.iteration);
    } else if (e.case_index >= 0) {
      name = fmt::format("{} {}\"", name_q, phase);
    } else {
      name = fmt::format("\"{}\"", phase);
    }
    if (!block.empty() || first_written_) block += ",\n";
    fmt::format_to(std::back_inserter(block),
                   "{{\"name\":{},\"cat\":\"{}\",\"ph\":\"X\",\"ts\":{:.3f},\"dur\":{:.3f},\"pid\":{},\"tid\":0,"
                   "\"args\":{{{}\"phase\":\"{}\",\"exec\":{}{}}}}}",
                   name, cat, static_cast<double>(e.start_ns) / 1e3, static_cast<double>(e.end_ns - e.start_ns) / 1e3,
                   rank_, args_body, cat, exec_, extra);
  }
  file_->write_line(block);
  first_written_ = true;
  events_.clear();
}

}  // namespace commbench
