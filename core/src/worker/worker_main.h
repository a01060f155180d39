// The worker process: `commbench __worker ...` (started by the agent, never by users).
// Loads exactly one plugin, creates the communicator through the bootstrap store, runs the
// execution's cases, streams JSON lines to the agent on a pipe (fd 3), and exits with one of
// the worker codes of common/exit_codes.h.
#pragma once

#include "common/exit_codes.h"

namespace commbench {

int worker_main(int argc, char** argv);

}  // namespace commbench
