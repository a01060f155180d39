// One rank of `commbench conformance`: the checks a plugin must pass, run inside a process
// started like a worker (one plugin, one backend, one communicator over the host's bootstrap
// services), through the same code a benchmark run uses: BackendSession for every ABI call,
// CaseBuffers and OpExecutor for the ops, check_pattern for the exact expected results.
//
// Every rank runs the same sequence; after each op case the ranks agree on its outcome through
// the bootstrap (so one rank's failure stops all of them at the same point instead of leaving
// the others waiting in the next collective). Each check is reported as a "check" line on the
// result channel; the driver (conformance/driver.h) merges the ranks' lines.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "bootstrap/collectives.h"
#include "plugin/loader.h"
#include "worker/result_channel.h"

namespace commbench {

struct RankSuiteOptions {
  int rank = 0;
  int world = 1;
  int32_t op_timeout_ms = 30000;           // one op's wait; comm_create gets twice that
  uint64_t max_bytes = 4u << 20;           // the size ladder's top (conformance --max-bytes)
  std::map<std::string, std::string> options;  // the backend's options (--option key=value)
};

// Runs every check on this rank. `for_plugin` backs the host services handed to the plugin;
// `for_suite` is the suite's own (a separate key space: ranks whose plugin calls diverged must
// not pair the plugin's bootstrap collectives with the suite's). Returns the process exit code:
// 0 when every check ran (passed or failed: failures are in the lines), kWorkerExitUnavailable when the backend is
// unavailable here.
int run_rank_suite(const LoadedPlugin& plugin, Bootstrap& for_plugin, Bootstrap& for_suite, ResultChannel& out,
                   const RankSuiteOptions& opts);

// The "deadline" stage (conformance/deadline_check.cpp): on a communicator created with a short
// timeout, rank 0's collective that no other rank joins must end with CB_ERR_TIMEOUT within it.
int run_deadline_check(const LoadedPlugin& plugin, Bootstrap& for_plugin, Bootstrap& for_suite, ResultChannel& out,
                       const RankSuiteOptions& opts);

// A process of its own (init is once per process): init with an option no plugin knows must
// fail with CB_ERR_INVALID_ARGUMENT. Reports one check.
int run_unknown_option_check(const LoadedPlugin& plugin, Bootstrap& bootstrap, ResultChannel& out);

}  // namespace commbench
