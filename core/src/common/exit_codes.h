// Every exit code a commbench process returns, in one place (docs/output.md lists the job's).
#pragma once

namespace commbench {

// `commbench run` (and the other commands where they apply).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailures = 1;      // a run failed or a result was wrong, or an
                                             // expectation (`expect`) was missed; `commbench
                                             // compare`: a case regressed
inline constexpr int kExitInvalid = 2;       // the experiment did not validate, the output
                                             // cannot be written (found before any worker starts),
                                             // or the launch is wrong (LaunchConfigError)
inline constexpr int kExitOutputFailed = 3;  // results stopped being written mid-job (disk full,
                                             // I/O error); what was written is complete
inline constexpr int kExitInterrupted = 130;

// The worker process (`commbench __worker`), read by the agent: 0 done, 1 failed (an "error"
// line says why: phase, kind (common/failure_kind.h), message), 4 backend unavailable here.
inline constexpr int kWorkerExitFailed = 1;
inline constexpr int kWorkerExitUnavailable = 4;

}  // namespace commbench
