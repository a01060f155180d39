// The shared core of the fault-injection test plugins (crash, hang): a complete, minimal backend
// (ops allreduce and barrier, dtype f32, redop sum, host memory) whose collectives go through the
// host's bootstrap services: an allgather followed by a local sum. Slow, but real: the core
// measures and checks it like any other backend until the injected fault fires.
//
// Each plugin links this file and defines the three hooks below; this file defines the entry symbol.
// Every fault plugin also takes `timeout_ms` (a per-op limit on its bootstrap waits, as real
// plugins have one; 0 = the communicator's) and `timeout_ms_rank<R>` (that limit on rank R only).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "commbench/backend.h"

namespace cbtest {

using Options = std::map<std::string, std::string>;

// Parses an integer option, or returns `fallback` when it is absent. Throws std::invalid_argument
// with a message naming the option when the value is not an integer.
int64_t int_option(const Options& options, const std::string& key, int64_t fallback);

// ---- hooks each fault plugin defines
extern const char* const kPluginName;         // backend name, matches the file name
extern const char* const kPluginDescription;
extern const std::vector<std::string> kOptionKeys;  // accepted option keys; others are rejected

// Called once in init() with the run's options and this rank. Throws std::invalid_argument for
// a bad value (reported as CB_ERR_INVALID_ARGUMENT).
void configure(const Options& options, const cb_host_services& host);

// Called after an allreduce wrote its result on this rank; may alter it (to prove checks work).
void after_allreduce(const cb_host_services& host, float* result, size_t count);

// Called at the start of every post with its 0-based index on this rank (all ops count).
// This is where the fault fires; it may never return, or throw InjectedError to fail the post.
void before_post(const cb_host_services& host, uint64_t post_index);

// Optional (weak default: false): true makes allreduce local — the send buffer is copied to the
// receive buffer without talking to the other ranks — so that a plugin's own timing is the only
// time an op takes (the sleep plugin). Its results are then wrong for world > 1: run it with
// check = false.
bool collectives_are_local();

// Optional (weak defaults: false, -1): asynchronous allreduce. When posts_are_async() the plugin
// has CB_CAP_ASYNC, and after each allreduce async_completion_ns() gives the CLOCK_MONOTONIC time
// at which its request completes (test() reports done from then on, wait() sleeps until then);
// -1 completes it when post returns (the sleep plugin's `async` option; the workload tests).
bool posts_are_async();
int64_t async_completion_ns();

// Optional (weak default: nothing): called in comm_create with its 0-based index on this rank (the
// crash plugin's `fd_leak` option opens descriptors here, for the conformance leak check).
void on_comm_create(const cb_host_services& host, uint64_t index);

// Thrown by a hook: the current post (or comm_create) fails with this status and message.
struct InjectedError {
  cb_status status;
  std::string message;
};

}  // namespace cbtest
