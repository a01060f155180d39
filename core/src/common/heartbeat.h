// The worker's heartbeat: how often a worker tells its agent it is alive, and how long a silence
// means it is not. Shared by worker/ (which beats) and agent/ (which listens).
#pragma once

#include <chrono>

namespace commbench {

// A worker sends {"type":"beat"} this often from a thread of its own, whatever its main thread
// is doing (measuring, or blocked inside a plugin call).
inline constexpr std::chrono::milliseconds kHeartbeatPeriod{250};

// No line at all from a worker for this long: its process is not running (stopped by SIGSTOP or
// a debugger, in a frozen cgroup) or is starved of CPU. Eight periods, so that a busy machine's
// scheduling delays are not mistaken for silence.
inline constexpr std::chrono::milliseconds kSilentAfter{2000};

}  // namespace commbench
