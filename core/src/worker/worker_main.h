// The worker process: `commbench __worker ...` (started by the agent, never by users).
// Loads exactly one plugin, creates the communicator through the bootstrap store, runs the
// execution's cases, streams JSON lines to the agent on a pipe (fd 3), and exits:
//   0 done, 1 failed (an "error" line says why: phase, kind (common/failure_kind.h), message),
//   4 backend unavailable here.
#pragma once

namespace commbench {

inline constexpr int kWorkerExitFailed = 1;
inline constexpr int kWorkerExitUnavailable = 4;

int worker_main(int argc, char** argv);

}  // namespace commbench
