// Processes a worker started that left its process group (setsid, a daemon's double fork): the
// agent makes itself their "subreaper" (PR_SET_CHILD_SUBREAPER), so when their parent dies they
// become its children instead of init's, and after each execution it ends the ones started
// during it. Together with the per-worker process group (agent/worker_process.h) nothing a
// plugin starts outlives the execution that started it (docs/launching.md, "Security").
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace commbench {

// Makes this process the subreaper of its descendants. False where the kernel refuses.
bool adopt_orphans();

// A point in time comparable with when processes started (clock ticks since boot, as
// /proc/<pid>/stat counts them).
uint64_t process_clock_now();

// Kills (SIGKILL) and reaps every child of this process that started at or after `since`, again
// until none is left (a killed one's own children are adopted in turn). Returns their pids.
std::vector<pid_t> reap_adopted_since(uint64_t since);

}  // namespace commbench
