// Why a rank failed, as data. The worker sends it with its "error" line; the agent decides by it
// (a rank that timed out waiting for a peer is a victim; any other failure is the cause), never by
// searching the message, which a plugin may word as it likes ("timeout_ms must be ..." is not a
// timeout). One table maps the ABI's statuses to these kinds and both to their names.
#pragma once

#include <string_view>

#include "commbench/backend.h"

namespace commbench {

enum class FailureKind {
  kTimeout,            // a deadline passed (CB_ERR_TIMEOUT, the store's key timeouts, the run's timeout)
  kUnavailable,        // CB_ERR_UNAVAILABLE
  kUnimplemented,      // CB_ERR_UNIMPLEMENTED
  kInvalidArgument,    // CB_ERR_INVALID_ARGUMENT
  kResourceExhausted,  // CB_ERR_RESOURCE_EXHAUSTED
  kInternal,           // CB_ERR_INTERNAL, or a status this build does not know
  kRemote,             // CB_ERR_REMOTE: a peer failed or went away
  kStore,              // the bootstrap store refused, dropped or garbled a request
  kOther,              // anything else the worker ran into (bad spec, a file it cannot read...)
  kCrash,              // the agent's judgement: the process died (a signal, or an exit with no error report)
  kOutOfMemory,        // the agent's judgement: the kernel's OOM killer took the process (agent/oom_watch.h)
  kInterrupted,        // the agent's judgement: the user or the launcher stopped the run
};

// "timeout", "unavailable", "unimplemented", "invalid_argument", "resource_exhausted",
// "internal", "remote", "store", "other", "crash", "out_of_memory", "interrupted" (the execution record's
// `failure_kind`, docs/output.md).
std::string_view failure_kind_name(FailureKind kind);
// The kind named `name`; kOther for a name this build does not know.
FailureKind failure_kind_from_name(std::string_view name);
// Whether a rank that failed this way is a victim of another rank's failure (a wait that timed
// out, a peer that went away), not a cause: the agents blame a rank whose kind is not one first.
bool is_consequence(FailureKind kind);
// The kind of a plugin's status (CB_OK and unknown codes: kInternal).
FailureKind failure_kind_of(cb_status status);

}  // namespace commbench
