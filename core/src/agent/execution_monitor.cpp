#include "agent/execution_monitor.h"

#include <poll.h>

#include <chrono>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "worker/worker_main.h"

namespace commbench {

std::atomic<int> g_interrupt_signal{0};

namespace {

constexpr int kKillGraceMs = 2000;

struct RankState {
  std::string phase = "startup";
  std::string error;  // from an "error" line
  std::string unavailable;
  bool done = false;
};

void handle_line(const std::string& line, int rank, std::vector<RankState>& ranks,
                 ExecutionResult& res, Reporter& reporter) {
  const ExecutionInfo& info = res.outcome.info;
  nlohmann::json m = nlohmann::json::parse(line, nullptr, false);
  if (m.is_discarded() || !m.is_object()) return;  // a plugin printing to fd 3 must not kill us
  const std::string type = m.value("type", "");
  RankState& st = ranks[static_cast<size_t>(rank)];
  if (type == "phase") {
    st.phase = m.value("phase", "");
    if (m.contains("what")) st.phase = fmt::format("case {} ({})", m.value("case", 0) + 1, m.value("what", ""));
  } else if (type == "case") {
    CaseRecord rec = m.get<CaseRecord>();
    reporter.case_done(rec);
    res.cases.push_back(std::move(rec));
    res.outcome.cases_done = static_cast<int>(res.cases.size());
  } else if (type == "transfers") {
    reporter.transfers_logged(info, m.value("entries", nlohmann::json::array()).get<std::vector<TransferLogEntry>>());
  } else if (type == "meta") {
    res.outcome.metadata["ranks"][std::to_string(rank)] = m.value("metadata", nlohmann::json::object());
  } else if (type == "error") {
    st.error = fmt::format("{} failed: {}", m.value("phase", "?"), m.value("message", ""));
  } else if (type == "unavailable") {
    st.unavailable = m.value("reason", "");
  } else if (type == "done") {
    st.done = true;
  }
}

void drain(std::vector<std::unique_ptr<WorkerProcess>>& workers, std::vector<RankState>& ranks,
           ExecutionResult& res, Reporter& reporter) {
  for (size_t r = 0; r < workers.size(); ++r) {
    std::vector<std::string> lines;
    workers[r]->read_lines(lines);
    for (const auto& l : lines) handle_line(l, static_cast<int>(r), ranks, res, reporter);
  }
}

// Worker index -> global rank, for messages.
int rank_of(const std::vector<int>& ranks, size_t i) { return ranks[i]; }

// Explain a timeout: ranks that never reported an error are the ones that were stuck.
std::string timeout_reason(double timeout_s, const std::vector<RankState>& ranks,
                           const std::vector<int>& global) {
  std::vector<int> stuck, gave_up;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].done) continue;
    (ranks[r].error.empty() ? stuck : gave_up).push_back(static_cast<int>(r));
  }
  std::string s = fmt::format("timed out after {:g} s", timeout_s);
  for (int r : stuck) s += fmt::format("; rank {} stuck in {}", global[static_cast<size_t>(r)], ranks[static_cast<size_t>(r)].phase);
  for (int& r : gave_up) r = global[static_cast<size_t>(r)];
  if (!gave_up.empty()) s += fmt::format("; ranks {} gave up waiting", fmt::join(gave_up, ","));
  return s;
}

// The other victims of a stuck rank time out at about the same moment as the first, but on a
// loaded machine their reports can trail it by more than one poll; blaming the first silent rank
// right away could name a victim. Wait (up to 2 s) until at most one other rank is silent.
void wait_for_other_victims(std::vector<std::unique_ptr<WorkerProcess>>& workers,
                            std::vector<RankState>& ranks, ExecutionResult& res, Reporter& reporter,
                            size_t first_victim) {
  const auto judge_by = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (;;) {
    size_t silent = 0;
    for (size_t s = 0; s < ranks.size(); ++s)
      silent += s != first_victim && !ranks[s].done && ranks[s].error.empty() && !workers[s]->poll_exit();
    if (silent <= 1 || std::chrono::steady_clock::now() >= judge_by) return;
    std::vector<pollfd> fds;
    for (auto& w : workers)
      if (w->result_fd() >= 0) fds.push_back(pollfd{w->result_fd(), POLLIN, 0});
    ::poll(fds.data(), fds.size(), 20);
    drain(workers, ranks, res, reporter);
  }
}

}  // namespace

ExecutionResult monitor_execution(const Execution& exec, const ExecutionInfo& info,
                                  std::vector<std::unique_ptr<WorkerProcess>>& workers,
                                  const std::vector<int>& global, Reporter& reporter,
                                  const ExternalAbort& external_abort) {
  using clock = std::chrono::steady_clock;
  ExecutionResult res;
  res.outcome.info = info;
  std::vector<RankState> ranks(workers.size());
  const auto start = clock::now();
  // Workers enforce the timeout themselves; the agent's deadline is the backstop for a rank
  // that is stuck where it cannot notice (inside a plugin call that never returns).
  const auto deadline = start + std::chrono::milliseconds(static_cast<int64_t>(exec.timeout_s * 1000) + 1500);

  std::string failure;
  int failed_rank = -1;
  unsigned ticks = 0;
  std::string status = "ok";
  for (;;) {
    std::vector<pollfd> fds;
    for (auto& w : workers)
      if (w->result_fd() >= 0) fds.push_back(pollfd{w->result_fd(), POLLIN, 0});
    if (!fds.empty()) ::poll(fds.data(), fds.size(), 50);
    drain(workers, ranks, res, reporter);

    bool all_exited = true;
    for (size_t r = 0; r < workers.size(); ++r) {
      WorkerProcess& w = *workers[r];
      if (!w.poll_exit()) {
        all_exited = false;
        continue;
      }
      if (!failure.empty() || w.exited_cleanly()) continue;
      failed_rank = rank_of(global, r);
      RankState& st = ranks[r];
      drain(workers, ranks, res, reporter);
      if (WIFEXITED(w.wait_status()) && WEXITSTATUS(w.wait_status()) == kWorkerExitUnavailable) {
        status = "unavailable";
        failure = st.unavailable.empty() ? "backend unavailable" : st.unavailable;
      } else {
        status = "failed";
        failure = fmt::format("rank {} {} during {}", rank_of(global, r), w.describe_exit(), st.phase);
        if (!st.error.empty()) failure += ": " + st.error;
        // A rank that gave up waiting is a victim: blame the rank that never answered.
        if (st.error.find("timeout") != std::string::npos || st.error.find("timed out") != std::string::npos) {
          wait_for_other_victims(workers, ranks, res, reporter, r);
          for (size_t s = 0; s < ranks.size(); ++s) {
            if (s != r && !ranks[s].done && ranks[s].error.empty() && !workers[s]->poll_exit()) {
              failed_rank = rank_of(global, s);
              failure = timeout_reason(exec.timeout_s, ranks, global) + "; first to give up: " + failure;
              break;
            }
          }
        }
      }
    }
    if (all_exited) break;
    if (!failure.empty()) break;
    if (g_interrupt_signal.load()) {
      status = "interrupted";
      const int sig = g_interrupt_signal.load();
      failure = fmt::format("interrupted by signal {} (SIG{})", sig, sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
      break;
    }
    if (clock::now() > deadline) {
      drain(workers, ranks, res, reporter);
      // Workers time out on their own at the same deadline; on a loaded machine the victims'
      // reports can lag. Give them up to 2 s more before judging, or the first rank to be
      // blamed would be whichever had not written its error yet rather than the stuck one.
      bool any_error = false;
      for (const auto& st : ranks) any_error |= !st.error.empty();
      if (!any_error && clock::now() < deadline + std::chrono::seconds(2)) continue;
      status = "failed";
      failure = timeout_reason(exec.timeout_s, ranks, global);
      for (size_t r = 0; r < ranks.size(); ++r)
        if (!ranks[r].done && ranks[r].error.empty()) { failed_rank = rank_of(global, r); break; }
      break;
    }
    if (external_abort && ++ticks % 2 == 0) {  // every ~100 ms: one store round trip
      if (auto why = external_abort()) {
        drain(workers, ranks, res, reporter);
        status = "failed";
        failure = *why;
        failed_rank = -2;  // another agent's rank; the caller fills it in from that agent's outcome
        break;
      }
    }
  }
  for (auto& w : workers) w->terminate(kKillGraceMs);
  drain(workers, ranks, res, reporter);

  res.outcome.status = status;
  res.outcome.reason = failure;
  res.outcome.failed_rank = failed_rank;
  res.outcome.elapsed_s = std::chrono::duration<double>(clock::now() - start).count();
  res.outcome.cases_done = static_cast<int>(res.cases.size());
  return res;
}

}  // namespace commbench
