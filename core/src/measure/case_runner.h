// Measures one case on every rank: buffers, correctness check, warm-up, timed iterations with a
// synchronised start, then cross-rank aggregation of the per-iteration times. Collective over
// the ranks of the execution: every rank calls it with the same case.
#pragma once

#include <chrono>
#include <functional>
#include <optional>

#include "bootstrap/collectives.h"
#include "measure/case_record.h"
#include "plan/plan.h"
#include "worker/backend_session.h"

namespace commbench {

struct CaseEnvironment {
  BackendSession& session;
  Bootstrap& bootstrap;
  const Execution& exec;
  cb_capabilities caps;
  std::chrono::steady_clock::time_point deadline;  // the execution's timeout
  int local_world = 1;  // ranks of this execution on this host: they share its memory
};

// Milliseconds left until the execution's deadline (at least 1).
int32_t remaining_ms(const CaseEnvironment& env);
// Synchronised start: the backend's own barrier when it has one (cheapest), else the store's.
void sync_start(CaseEnvironment& env);

// A record with the case's identity filled in (no outcome yet).
CaseRecord make_case_record(const Execution& e, const CaseSpec& c);

// Returns the record on rank 0, nullopt on other ranks. Throws PluginError / StoreError for
// failures that break the communicator (the execution then fails).
std::optional<CaseRecord> run_case(CaseEnvironment& env, const CaseSpec& spec);

// Why the backend cannot run this case according to its capabilities ("" = it can).
std::string unsupported_reason(const cb_capabilities& caps, const CaseSpec& spec, cb_mem memory);

}  // namespace commbench
