// What agents say to each other through the job's store: the keys, how agent 0 reads one key of
// every agent in batches, and how an agent that leaves early says so. Shared by the agents'
// meeting (agent_meeting.cpp: join, agree, finish) and their executions (agent_group.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bootstrap/deadline.h"
#include "bootstrap/store.h"

namespace commbench {

inline Bytes store_bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }
inline std::string store_text(const Bytes& b) { return std::string(b.begin(), b.end()); }

std::string exec_key(int index, const std::string& what);
// An agent that left the job early writes a StopNotice here (AgentGroup::announce_leaving).
std::string left_key(int k);
// Each agent's verdict on rank 0's plan digest: "ok" or why it differs (AgentGroup::agree).
std::string agree_key(int k);

// Long waits for other agents are taken in slices of this, so that a signal to this agent
// (Ctrl-C, the launcher's SIGTERM) and an agent that announced leaving are seen within it.
inline constexpr Millis kWaitSlice{1000};

// Why an agent left the job (announce_leaving), or why agent 0 stopped it for everyone while
// they met: a signal (the job is interrupted: exit 130) or an error.
struct StopNotice {
  bool interrupted = false;
  std::string why;
  bool misconfigured = false;  // the launch itself is wrong (LaunchConfigError: exit 2)
};
std::string encode_stop_notice(const StopNotice& n);
StopNotice decode_stop_notice(const std::string& text);

using AgentValueSink = std::function<void(int, const uint8_t*, size_t)>;
// Agent k's key among a set of per-agent keys.
using KeyOf = std::function<std::string(int)>;

// Reads key_of(k) of every agent k of `agents`, in batched MULTI_GETs that share `deadline`, so
// agents that never wrote cost the wait once, not once each. Hands each value that arrived to
// found(k, bytes) and returns the agents whose key never came.
std::vector<int> read_keys(StoreClient& store, const KeyOf& key_of, const std::vector<int>& agents,
                           const Deadline& deadline, const AgentValueSink& found);

// The agents of `agents` that announced leaving, with why (no wait).
std::map<int, StopNotice> agents_that_left(StoreClient& store, const std::vector<int>& agents);

// Which leavers wait_for_agents looks for: those still missing (an execution's start, which goes
// on without them), or every agent waited for, stopping at the first (the join and agree, which
// end the job for one).
enum class LeaverScope { kMissing, kAll };

// Agent 0: waits for the agents' keys (`key_of`) until `timeout`, a slice at a time. Returns the
// agents whose key never came; those that announced leaving are put in `left` instead; stops
// early (returning the rest) when this agent got a signal.
std::vector<int> wait_for_agents(StoreClient& store, const KeyOf& key_of, std::vector<int> waiting, Millis timeout,
                                 const AgentValueSink& found, std::map<int, StopNotice>& left,
                                 LeaverScope scope = LeaverScope::kMissing);

// While alive, the client's waits end on a signal to this agent (StoreError(Interrupted)) within
// StoreClient::kStopCheckInterval.
class StopOnSignal {
 public:
  explicit StopOnSignal(StoreClient& c);
  ~StopOnSignal() { c_.set_stop_check({}); }
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;

 private:
  StoreClient& c_;
};

// "interrupted by signal 2 (SIGINT) while waiting for <what>", for the signal this agent got.
std::string interrupted_text(const std::string& waiting_for);

}  // namespace commbench
