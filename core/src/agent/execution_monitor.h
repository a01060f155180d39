// Runs one execution's workers to completion: reads their JSON lines, forwards case records to
// the reporters as they arrive, and turns crashes, non-zero exits, timeouts and interrupts into
// an ExecutionOutcome that names the rank, the phase and the reason.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <memory>
#include <vector>

#include "agent/worker_process.h"
#include "plan/plan.h"
#include "report/reporter.h"

namespace commbench {

// Set by the SIGINT/SIGTERM/SIGHUP handler; every loop of the agent checks it.
extern std::atomic<int> g_interrupt_signal;
// How many such signals arrived: a second one ends even the waits the first one does not.
extern std::atomic<int> g_interrupt_count;

struct ExecutionResult {
  ExecutionOutcome outcome;
  std::vector<CaseRecord> cases;
  std::vector<KindRecord> records;  // "record" lines (KindRecord), rank 0's
  // Case indices whose records arrived: of exec.cases, or of a data_parallel run's overlap values.
  std::set<int> reported_cases;
  // A failed execution: the case it broke in, which has no record yet (agent/broken_case.h);
  // -1: none (not failed, a memory workload, outside any case, or not this agent's to record).
  int broken_case = -1;
};

// Asked every tick (50 ms) in multi-agent jobs: a reason when another agent's rank failed and
// this agent's workers must stop too.
using ExternalAbort = std::function<std::optional<std::string>()>;

// Called for each case record of the first hosted rank before the reporters see it, with the
// case's window on the system clock (from the rank's last phase message to the record's
// arrival): the telemetry summary is added here (agent/observability.h).
using CaseAnnotator = std::function<void(CaseRecord&, int64_t t0_unix_ns, int64_t t1_unix_ns)>;

// Ends every worker: SIGTERM to all at once (with SIGCONT, so that a stopped one wakes up to
// receive it), then SIGKILL to any still there after 2 s. Always reaps.
void stop_workers(std::vector<std::unique_ptr<WorkerProcess>>& workers);

// `workers[i]` is rank `ranks[i]` (local mode: every rank, in order; under a launcher: this
// agent's one). Grace periods: workers get SIGTERM, then SIGKILL 2 s later.
ExecutionResult monitor_execution(const Execution& exec, const ExecutionInfo& info,
                                  std::vector<std::unique_ptr<WorkerProcess>>& workers,
                                  const std::vector<int>& ranks, Reporter& reporter,
                                  const ExternalAbort& external_abort = {},
                                  const CaseAnnotator& annotate = {});

}  // namespace commbench
