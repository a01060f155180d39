#include "agent/execution_monitor.h"

#include <poll.h>
#include <signal.h>

#include <chrono>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "agent/broken_case.h"
#include "agent/oom_watch.h"
#include "common/exit_codes.h"
#include "common/failure_kind.h"
#include "common/heartbeat.h"
#include "report/clock_alignment.h"

namespace commbench {

std::atomic<int> g_interrupt_signal{0};
std::atomic<int> g_interrupt_count{0};

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kKillGraceMs = 2000;

struct RankState {
  int rank = 0;  // the worker's rank in the world (its index among this agent's workers differs under a launcher)
  std::string phase = "startup";
  std::string error;  // from an "error" line
  FailureKind error_kind = FailureKind::kOther;  // its "kind": what the agent decides by
  std::string error_phase;                       // its "phase"
  int plugin_status = -1;                        // its "status": the plugin's cb_status, if a plugin call failed
  std::vector<int> waiting_for;                  // its "waiting_for": ranks it gave up waiting for (global)
  bool time_limit = false;                       // its "time_limit": the execution's limit ran out on it
  std::string unavailable;
  int unavailable_status = -1;  // the plugin's status when a plugin call said so; -1 otherwise
  bool done = false;
  int case_index = -1;  // the case it is in (its last phase message); -1: none
  Clock::time_point heard;  // when the agent last read anything from it (a beat at least)
  int64_t window_start_ns = 0;  // system clock at its last phase message (CaseAnnotator)
};

int64_t system_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch()).count();
}

void handle_line(const std::string& line, int rank, std::vector<RankState>& ranks,
                 ExecutionResult& res, Reporter& reporter, const CaseAnnotator& annotate) {
  const ExecutionInfo& info = res.outcome.info;
  nlohmann::json m = nlohmann::json::parse(line, nullptr, false);
  if (m.is_discarded() || !m.is_object()) return;  // a plugin printing to fd 3 must not kill us
  const std::string type = m.value("type", "");
  RankState& st = ranks[static_cast<size_t>(rank)];
  if (type == "phase") {
    st.window_start_ns = system_now_ns();
    st.phase = m.value("phase", "");
    if (m.contains("what")) st.phase = fmt::format("case {} ({})", m.value("case", 0) + 1, m.value("what", ""));
    st.case_index = m.value("case", -1);
  } else if (type == "case") {
    res.reported_cases.insert(m.value("case_index", -1));
    CaseRecord rec = m.get<CaseRecord>();
    if (annotate && st.rank == 0) annotate(rec, st.window_start_ns, system_now_ns());
    reporter.case_done(rec);
    res.cases.push_back(std::move(rec));
    res.outcome.cases_done = static_cast<int>(res.cases.size());
  } else if (type == "record") {
    KindRecord rec{m.value("kind", ""), nlohmann::ordered_json(m.value("record", nlohmann::json::object()))};
    if (rec.kind.empty() || rec.kind == "case") return;  // not a kind a reader could dispatch on
    reporter.record_done(rec);
    res.records.push_back(std::move(rec));
  } else if (type == "transfers") {
    reporter.transfers_logged(info, m.value("entries", nlohmann::json::array()).get<std::vector<TransferLogEntry>>());
  } else if (type == "clock") {
    res.outcome.clock = clock_record(m.value("rounds", 0),
                                     m.value("start", nlohmann::json::array()).get<std::vector<ClockEstimate>>(),
                                     m.value("end", nlohmann::json::array()).get<std::vector<ClockEstimate>>());
  } else if (type == "meta") {
    res.outcome.metadata["ranks"][std::to_string(st.rank)] = m.value("metadata", nlohmann::json::object());
  } else if (type == "error") {
    // "init failed: backend 'x': init failed (...)": the plugin's error already names the call.
    const std::string phase = m.value("phase", "?"), message = m.value("message", "");
    st.error = message.find(fmt::format(": {} failed (", phase)) != std::string::npos
                   ? message
                   : fmt::format("{} failed: {}", phase, message);
    st.error_kind = failure_kind_from_name(m.value("kind", ""));
    st.error_phase = m.value("phase", "");
    st.time_limit = m.value("time_limit", false);
    st.plugin_status = m.value("status", -1);
    if (m.contains("waiting_for") && m["waiting_for"].is_array())
      for (const auto& r : m["waiting_for"])
        if (r.is_number_integer()) st.waiting_for.push_back(r.get<int>());
  } else if (type == "unavailable") {
    st.unavailable = m.value("reason", "");
    st.unavailable_status = m.value("status", -1);
  } else if (type == "done") {
    st.done = true;
  }
}

void drain(std::vector<std::unique_ptr<WorkerProcess>>& workers, std::vector<RankState>& ranks,
           ExecutionResult& res, Reporter& reporter, const CaseAnnotator& annotate) {
  const auto now = Clock::now();
  for (size_t r = 0; r < workers.size(); ++r) {
    std::vector<std::string> lines;
    workers[r]->read_lines(lines);
    if (!lines.empty()) ranks[r].heard = now;
    for (const auto& l : lines) handle_line(l, static_cast<int>(r), ranks, res, reporter, annotate);
  }
}

// A rank still expected to answer: running, no error reported, not finished.
bool waiting_on(const std::vector<std::unique_ptr<WorkerProcess>>& workers,
                const std::vector<RankState>& ranks, size_t r) {
  return !ranks[r].done && ranks[r].error.empty() && !workers[r]->exited();
}

// The rank whose heartbeat stopped first, if any has been silent for kSilentAfter: its process
// is stopped, frozen or starved, and every rank waiting on it is a victim. Its peers stuck in a
// collective with it keep beating, so they are never the one named.
std::optional<size_t> silent_rank(const std::vector<std::unique_ptr<WorkerProcess>>& workers,
                                  const std::vector<RankState>& ranks) {
  const auto now = Clock::now();
  std::optional<size_t> first;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (!waiting_on(workers, ranks, r) || now - ranks[r].heard < kSilentAfter) continue;
    if (!first || ranks[r].heard < ranks[*first].heard) first = r;
  }
  return first;
}

// Whether a rank other than `r` exited with a failure or reported an error that is not a
// victim's (a timeout, a peer's failure): a cause that `r`'s "remote" error can point at.
bool peer_failed(std::vector<std::unique_ptr<WorkerProcess>>& workers, const std::vector<RankState>& ranks, size_t r) {
  for (size_t s = 0; s < ranks.size(); ++s) {
    if (s == r) continue;
    const bool victim = !ranks[s].error.empty() && is_consequence(ranks[s].error_kind);
    if (victim) continue;
    // An error of its own, or an exit before its result (any code: exit(0) inside a library too).
    if (!ranks[s].error.empty() || (workers[s]->poll_exit() && !ranks[s].done)) return true;
  }
  return false;
}

// Worker index -> global rank, for messages.
int rank_of(const std::vector<int>& ranks, size_t i) { return ranks[i]; }

// Each hosted rank's case: global rank -> the case index of its last phase message (-1: none).
std::map<int, int> case_of_rank(const std::vector<RankState>& ranks, const std::vector<int>& global) {
  std::map<int, int> out;
  for (size_t s = 0; s < ranks.size(); ++s) out[rank_of(global, s)] = ranks[s].case_index;
  return out;
}

// The first words of a timeout's reason, true to what fired: the execution's own limit (`timeout`)
// when the agent's deadline passed, else the rank whose wait gave up first and when — a rank's
// op or bootstrap timeout can fire seconds into a run whose limit is 10 minutes.
std::string execution_timed_out(double timeout_s, Clock::time_point start) {
  return fmt::format("timed out after {:.1f} s (the execution's limit, `timeout`, is {:g} s)",
                     std::chrono::duration<double>(Clock::now() - start).count(), timeout_s);
}
std::string rank_gave_up(int rank, Clock::time_point start) {
  return fmt::format("timed out: rank {} gave up waiting {:.1f} s into the execution",
                     rank, std::chrono::duration<double>(Clock::now() - start).count());
}

// Explain a timeout: a rank that went silent is the cause; otherwise the ranks that never reported
// an error are the ones that were stuck.
std::string timeout_reason(const std::string& head, const std::vector<RankState>& ranks,
                           const std::vector<int>& global, std::optional<size_t> silent = std::nullopt) {
  std::vector<int> stuck, gave_up;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].done || (silent && r == *silent)) continue;
    (ranks[r].error.empty() ? stuck : gave_up).push_back(static_cast<int>(r));
  }
  std::string s = head;
  if (silent) {
    const RankState& st = ranks[*silent];
    s += fmt::format("; rank {} stopped responding during {} (nothing from its process for {:.1f} s, "
                     "not even a heartbeat: it was stopped, frozen or starved of CPU)",
                     global[*silent], st.phase,
                     std::chrono::duration<double>(Clock::now() - st.heard).count());
    for (int& r : stuck) r = global[static_cast<size_t>(r)];
    for (int r : gave_up) stuck.push_back(global[static_cast<size_t>(r)]);
    if (!stuck.empty())
      s += fmt::format("; rank{} {} {} waiting for it", stuck.size() == 1 ? "" : "s", fmt::join(stuck, ","),
                       stuck.size() == 1 ? "was" : "were");
    return s;
  }
  for (int r : stuck) s += fmt::format("; rank {} stuck in {}", global[static_cast<size_t>(r)], ranks[static_cast<size_t>(r)].phase);
  for (int& r : gave_up) r = global[static_cast<size_t>(r)];
  if (!gave_up.empty())
    s += fmt::format("; rank{} {} gave up waiting", gave_up.size() == 1 ? "" : "s", fmt::join(gave_up, ","));
  return s;
}

// The phase every rank is in when none has finished or reported an error (all still running the
// same case); nullopt when they differ (some are behind: those are stuck) or one is done or failed.
// The case every rank was in when the execution's limit ran out on all of them alike: each
// reported that limit (a rank still working reaches it and says so), or none did (all blocked
// alike). A rank silent beside others that reported is stuck, not slow (a hung call cannot
// report): nullopt then, as when a rank finished, failed otherwise, or the ranks' cases differ.
// Compared by each rank's last progress phase, in the agent's own words for every rank (an
// error's phase is the worker's, worded otherwise: "case 1/3 (...)").
std::optional<std::string> common_phase(const std::vector<RankState>& ranks) {
  std::optional<std::string> phase;
  size_t reported = 0, silent = 0;
  for (const RankState& st : ranks) {
    if (st.done || (!st.error.empty() && !st.time_limit)) return std::nullopt;
    (st.time_limit ? reported : silent) += 1;
    if (phase && *phase != st.phase) return std::nullopt;
    phase = st.phase;
  }
  if (reported > 0 && silent > 0) return std::nullopt;
  return phase;
}

// Every rank still running, none behind the others, none silent: the limit ran out on all of
// them alike. Nothing tells a slow case from one that hangs everywhere, and no rank is more to
// blame than another.
std::string limit_ran_out_everywhere(const std::string& head, const std::vector<int>& global, const std::string& phase) {
  // In the backend's own setup no case is to blame: a probe's hang in init was told that "the
  // cases need more time". Every other phase (a case, all_pairs, a workload, finalisation) keeps
  // that advice.
  const bool in_a_case = phase != "load plugin" && phase != "init" && phase != "communicator creation";
  return fmt::format("{}; rank{} {} {} all still in {}: {}", head, global.size() == 1 ? "" : "s", fmt::join(global, ","),
                     global.size() == 1 ? "was" : "were", phase,
                     in_a_case ? "the cases need more time than `timeout` gives them (raise it), or they hang there on "
                                 "every rank"
                               : "the backend hangs there on every rank, or needs more time than `timeout` leaves it "
                                 "(raise it); no case had started");
}

// The other victims of a stuck rank time out at about the same moment as the first, but on a
// loaded machine their reports can trail it by more than one poll; blaming the first silent rank
// right away could name a victim. Wait (up to 2 s) until at most one other rank is silent.
// `allowed_silent`: how many others may stay silent (1: the stuck one; 0: until every rank said
// how its wait ended, for the execution's own limit, which a working rank reports too).
void wait_for_other_victims(std::vector<std::unique_ptr<WorkerProcess>>& workers,
                            std::vector<RankState>& ranks, ExecutionResult& res, Reporter& reporter,
                            size_t first_victim, const CaseAnnotator& annotate, size_t allowed_silent = 1) {
  const auto judge_by = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (;;) {
    if (silent_rank(workers, ranks)) return;  // the cause is known: no need to wait for reports
    size_t silent = 0;
    for (size_t s = 0; s < ranks.size(); ++s)
      silent += s != first_victim && !ranks[s].done && ranks[s].error.empty() && !workers[s]->poll_exit();
    if (silent <= allowed_silent || std::chrono::steady_clock::now() >= judge_by) return;
    std::vector<pollfd> fds;
    for (auto& w : workers)
      if (w->result_fd() >= 0) fds.push_back(pollfd{w->result_fd(), POLLIN, 0});
    ::poll(fds.data(), fds.size(), 20);
    drain(workers, ranks, res, reporter, annotate);
  }
}

}  // namespace

void stop_workers(std::vector<std::unique_ptr<WorkerProcess>>& workers) {
  for (auto& w : workers) {
    w->signal(SIGTERM);
    w->signal(SIGCONT);
  }
  const auto until = Clock::now() + std::chrono::milliseconds(kKillGraceMs);
  for (auto& w : workers) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    w->terminate(static_cast<int>(std::max<int64_t>(left.count(), 0)));
  }
}

ExecutionResult monitor_execution(const Execution& exec, const ExecutionInfo& info,
                                  std::vector<std::unique_ptr<WorkerProcess>>& workers,
                                  const std::vector<int>& global, Reporter& reporter,
                                  const ExternalAbort& external_abort, const CaseAnnotator& annotate) {
  using clock = std::chrono::steady_clock;
  ExecutionResult res;
  res.outcome.info = info;
  const OomWatch oom;  // the kernel's OOM-kill counters as the execution starts
  std::vector<RankState> ranks(workers.size());
  const auto start = clock::now();
  for (size_t i = 0; i < ranks.size(); ++i) ranks[i].rank = rank_of(global, i);
  for (auto& st : ranks) {
    st.heard = start;
    st.window_start_ns = system_now_ns();
  }
  // Workers enforce the timeout themselves; the agent's deadline is the backstop for a rank
  // that is stuck where it cannot notice (inside a plugin call that never returns).
  const auto deadline = start + std::chrono::milliseconds(static_cast<int64_t>(exec.timeout_s * 1000) + 1500);

  std::string failure;
  int failed_rank = -1;
  unsigned ticks = 0;
  std::string status = "ok";
  // What the outcome records as data: the kind decided on, the phase, the plugin's status.
  FailureKind kind = FailureKind::kOther;
  std::string failed_phase;
  int plugin_status = -1;
  auto judged = [&](FailureKind k, std::string phase, int plugin = -1) {
    kind = k;
    failed_phase = std::move(phase);
    plugin_status = plugin;
  };
  for (;;) {
    std::vector<pollfd> fds;
    for (auto& w : workers)
      if (w->result_fd() >= 0) fds.push_back(pollfd{w->result_fd(), POLLIN, 0});
    if (!fds.empty()) ::poll(fds.data(), fds.size(), 50);
    drain(workers, ranks, res, reporter, annotate);

    bool all_exited = true;
    for (size_t r = 0; r < workers.size(); ++r) {
      WorkerProcess& w = *workers[r];
      if (!w.poll_exit()) {
        all_exited = false;
        continue;
      }
      if (!failure.empty()) continue;
      RankState& st = ranks[r];
      if (w.exited_cleanly()) {
        // Its last lines may still be in the pipe: read them before judging.
        if (!st.done) drain(workers, ranks, res, reporter, annotate);
        if (st.done) continue;
        // Exit code 0 without "done": the process ended inside the backend (exit() or _exit()
        // in a plugin or library). That rank is the failure, now, not a timeout of its peers.
        failed_rank = rank_of(global, r);
        status = "failed";
        failure = fmt::format("rank {} exited with code 0 during {} before sending its result: the process "
                              "was ended from inside (exit() or _exit() in the backend or a library it uses)",
                              failed_rank, st.phase);
        judged(FailureKind::kCrash, st.phase);
        continue;
      }
      failed_rank = rank_of(global, r);
      drain(workers, ranks, res, reporter, annotate);
      if (WIFEXITED(w.wait_status()) && WEXITSTATUS(w.wait_status()) == kWorkerExitUnavailable) {
        status = "unavailable";
        failure = st.unavailable.empty() ? "backend unavailable" : st.unavailable;
        // A plugin call said so: its status is recorded, as for a failed call (GPU setup: none).
        judged(FailureKind::kUnavailable, st.phase, st.unavailable_status);
      } else {
        status = "failed";
        // SIGKILL while the kernel counted an OOM kill: say so, with the limit that was hit.
        std::optional<std::string> oom_kill;
        if (WIFSIGNALED(w.wait_status()) && WTERMSIG(w.wait_status()) == SIGKILL) oom_kill = oom.explain_kill();
        failure = fmt::format("rank {} {} during {}", rank_of(global, r), oom_kill ? *oom_kill : w.describe_exit(), st.phase);
        if (!st.error.empty()) failure += ": " + st.error;
        if (oom_kill) judged(FailureKind::kOutOfMemory, st.phase);
        else if (st.error.empty()) judged(FailureKind::kCrash, st.phase);
        else judged(st.error_kind, st.error_phase, st.plugin_status);
        // A rank that gave up waiting (timeout) or saw a peer fail (remote) is a victim: blame the
        // rank that never answered. Decided by the reported kind, never by the message's words.
        if (st.time_limit) {  // the execution's limit, not a peer: blamed on none if it ran out on all
          wait_for_other_victims(workers, ranks, res, reporter, r, annotate, 0);
          if (const auto phase = common_phase(ranks)) {
            failure = limit_ran_out_everywhere(execution_timed_out(exec.timeout_s, start), global, *phase);
            failed_rank = -1;
            judged(FailureKind::kTimeout, *phase);
            continue;
          }
        }
        if (!st.error.empty() && is_consequence(st.error_kind)) {
          // The victim said whom it waited for (a bootstrap collective's absentees): blame the
          // first of them still running without an error of its own.
          bool named = false;
          for (int g : st.waiting_for)
            for (size_t s = 0; s < ranks.size() && !named; ++s)
              if (rank_of(global, s) == g && s != r && !ranks[s].done && ranks[s].error.empty()) {
                failed_rank = g;
                failure = rank_gave_up(rank_of(global, r), start) +
                          fmt::format("; rank {} stuck in {}: it never arrived where rank {} waited for it", g,
                                      ranks[s].phase, rank_of(global, r)) +
                          "; first to give up: " + failure;
                judged(FailureKind::kTimeout, ranks[s].phase);
                named = true;
              }
          if (named) continue;
          wait_for_other_victims(workers, ranks, res, reporter, r, annotate);
          if (const auto quiet = silent_rank(workers, ranks)) {
            failed_rank = rank_of(global, *quiet);
            failure = timeout_reason(rank_gave_up(rank_of(global, r), start), ranks, global, quiet) +
                      "; first to give up: " + failure;
            judged(FailureKind::kTimeout, ranks[*quiet].phase);
            continue;
          }
          // "A peer failed" while no peer failed: every other rank is alive, with no error of its
          // own, and the ones still running wait for this one. The failure is this rank's own (NCCL,
          // for one, reports a failed system call the same way whether it was local or a peer's).
          // Only where this agent runs every rank: under a launcher the peer that failed may be
          // another task's, which only agent 0's merge of the outcomes sees.
          if (st.error_kind == FailureKind::kRemote && workers.size() == static_cast<size_t>(exec.world_size) &&
              !peer_failed(workers, ranks, r)) {
            failure += fmt::format("; no other rank had failed or exited, so the failure is rank {}'s own",
                                   rank_of(global, r));
            continue;
          }
          for (size_t s = 0; s < ranks.size(); ++s) {
            if (s != r && !ranks[s].done && ranks[s].error.empty() && !workers[s]->poll_exit()) {
              failed_rank = rank_of(global, s);
              failure = timeout_reason(rank_gave_up(rank_of(global, r), start), ranks, global) +
                        "; first to give up: " + failure;
              judged(FailureKind::kTimeout, ranks[s].phase);
              break;
            }
          }
          // Nobody left waiting: the cause may already have exited (a crash noticed in the same
          // poll, after this victim in rank order). Judge that rank instead.
          if (failed_rank == rank_of(global, r))
            for (size_t s = r + 1; s < ranks.size(); ++s)
              if (workers[s]->poll_exit() && !workers[s]->exited_cleanly() &&
                  (ranks[s].error.empty() || !is_consequence(ranks[s].error_kind))) {
                failure.clear();
                failed_rank = -1;
                break;
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
      judged(FailureKind::kInterrupted, "");
      break;
    }
    if (clock::now() > deadline) {
      drain(workers, ranks, res, reporter, annotate);
      if (const auto quiet = silent_rank(workers, ranks)) {  // no need to wait for the others' reports
        status = "failed";
        failed_rank = rank_of(global, *quiet);
        failure = timeout_reason(execution_timed_out(exec.timeout_s, start), ranks, global, quiet);
        judged(FailureKind::kTimeout, ranks[*quiet].phase);
        break;
      }
      // Workers time out on their own at the same deadline; on a loaded machine the victims'
      // reports can lag. Give them up to 2 s more before judging, or the first rank to be
      // blamed would be whichever had not written its error yet rather than the stuck one.
      // Also while some have reported and others not: a rank still working reports the limit
      // too, a stuck one cannot (common_phase).
      bool any_error = false, any_silent = false;
      for (const auto& st : ranks) {
        any_error |= !st.error.empty();
        any_silent |= st.error.empty() && !st.done;
      }
      if ((!any_error || any_silent) && clock::now() < deadline + std::chrono::seconds(2)) continue;
      status = "failed";
      judged(FailureKind::kTimeout, "");
      if (const auto phase = common_phase(ranks)) {
        failure = limit_ran_out_everywhere(execution_timed_out(exec.timeout_s, start), global, *phase);
        judged(FailureKind::kTimeout, *phase);
        break;
      }
      failure = timeout_reason(execution_timed_out(exec.timeout_s, start), ranks, global);
      for (size_t r = 0; r < ranks.size(); ++r)
        if (!ranks[r].done && ranks[r].error.empty()) {
          failed_rank = rank_of(global, r);
          failed_phase = ranks[r].phase;
          break;
        }
      break;
    }
    if (external_abort && ++ticks % 2 == 0) {  // every ~100 ms: one store round trip
      if (auto why = external_abort()) {
        drain(workers, ranks, res, reporter, annotate);
        status = "failed";
        failure = *why;
        failed_rank = -2;  // another agent's rank; the caller fills it in from that agent's outcome
        break;
      }
    }
  }
  stop_workers(workers);
  drain(workers, ranks, res, reporter, annotate);
  if (status == "failed" && exec.workload != WorkloadKind::Memory)  // its records are memory records
    res.broken_case = broken_case_index(case_of_rank(ranks, global), failed_rank, res.reported_cases);

  res.outcome.status = status;
  res.outcome.reason = failure;
  res.outcome.failed_rank = failed_rank;
  if (status != "ok" && !failure.empty() && failed_rank != -2) {
    res.outcome.failure_kind = failure_kind_name(kind);
    res.outcome.failed_phase = failed_phase;
    res.outcome.plugin_status = plugin_status;
  }
  res.outcome.elapsed_s = std::chrono::duration<double>(clock::now() - start).count();
  res.outcome.cases_done = static_cast<int>(res.cases.size());
  return res;
}

}  // namespace commbench
