// Runs one execution's workers to completion: reads their JSON lines, forwards case records to
// the reporters as they arrive, and turns crashes, non-zero exits, timeouts and interrupts into
// an ExecutionOutcome that names the rank, the phase and the reason.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "agent/worker_process.h"
#include "plan/plan.h"
#include "report/reporter.h"

namespace commbench {

// Set by the SIGINT/SIGTERM handler; every loop of the agent checks it.
extern std::atomic<int> g_interrupt_signal;

struct ExecutionResult {
  ExecutionOutcome outcome;
  std::vector<CaseRecord> cases;
};

// `workers[r]` is rank r. Grace periods: workers get SIGTERM, then SIGKILL 2 s later.
ExecutionResult monitor_execution(const Execution& exec, const ExecutionInfo& info,
                                  std::vector<std::unique_ptr<WorkerProcess>>& workers,
                                  Reporter& reporter);

}  // namespace commbench
