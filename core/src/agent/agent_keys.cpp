#include "agent/agent_keys.h"

#include <string.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "agent/execution_monitor.h"

namespace commbench {

namespace {

// Agent 0 reads one key per agent ("ready/<k>", "outcome/<k>") in MULTI_GETs of at most this many
// keys: one round trip per batch instead of one per agent (16,384 per execution at 16k agents).
constexpr size_t kAgentsPerRead = 512;

// One MULTI_GET of `keys` (agent who[i]'s key is keys[i]). Agents whose key never came are
// appended to `never`. Outcomes carry the workers' metadata, so a batch's reply may pass the
// store's message limit, which the store refuses (the connection stays usable): the batch is then
// read in halves.
void read_batch(StoreClient& store, const std::vector<std::string>& keys, const std::vector<int>& who,
                const Deadline& deadline, const AgentValueSink& found, std::vector<int>& never) {
  try {
    store.multi_get_each(keys, Millis(deadline.remaining_ms()),
                         [&](size_t i, const uint8_t* data, size_t size) { found(who[i], data, size); });
  } catch (const StoreError& e) {
    if (e.code() == StoreError::Code::Protocol && keys.size() > 1) {
      const auto half = static_cast<std::ptrdiff_t>(keys.size() / 2);
      read_batch(store, {keys.begin(), keys.begin() + half}, {who.begin(), who.begin() + half}, deadline, found, never);
      read_batch(store, {keys.begin() + half, keys.end()}, {who.begin() + half, who.end()}, deadline, found, never);
      return;
    }
    // Without the server's list of absent keys the client itself gave up: the store is gone.
    if (e.code() != StoreError::Code::Timeout || e.missing_keys().empty()) throw;
    const std::set<std::string> absent(e.missing_keys().begin(), e.missing_keys().end());
    std::vector<std::string> present_keys;
    std::vector<int> present;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (absent.count(keys[i])) {
        never.push_back(who[i]);
      } else {
        present_keys.push_back(keys[i]);
        present.push_back(who[i]);
      }
    }
    // The rest arrived: read them without waiting (the deadline has passed).
    if (!present_keys.empty()) read_batch(store, present_keys, present, Deadline::after(Millis(0)), found, never);
  }
}

// A stop notice's first word: its kind.
constexpr const char* kLeftInterrupted = "interrupted";
constexpr const char* kLeftFailed = "failed";
constexpr const char* kLeftMisconfigured = "misconfigured";

}  // namespace

std::string exec_key(int index, const std::string& what) { return fmt::format("agents/exec{}/{}", index, what); }
std::string left_key(int k) { return fmt::format("agents/gone/{}", k); }
std::string agree_key(int k) { return fmt::format("agents/agree/{}", k); }

std::string encode_stop_notice(const StopNotice& n) {
  return fmt::format("{} {}", n.interrupted ? kLeftInterrupted : n.misconfigured ? kLeftMisconfigured : kLeftFailed, n.why);
}

StopNotice decode_stop_notice(const std::string& text) {
  const auto space = text.find(' ');
  const std::string kind = text.substr(0, space);
  StopNotice n;
  n.interrupted = kind == kLeftInterrupted;
  n.misconfigured = kind == kLeftMisconfigured;
  // Anything else (an unknown kind from another version) counts as a failure, reason kept whole.
  n.why = (n.interrupted || n.misconfigured || kind == kLeftFailed) && space != std::string::npos ? text.substr(space + 1)
                                                                                                  : text;
  return n;
}

std::vector<int> read_keys(StoreClient& store, const KeyOf& key_of, const std::vector<int>& agents,
                           const Deadline& deadline, const AgentValueSink& found) {
  std::vector<int> never;
  for (size_t begin = 0; begin < agents.size(); begin += kAgentsPerRead) {
    const size_t end = std::min(agents.size(), begin + kAgentsPerRead);
    const std::vector<int> who(agents.begin() + static_cast<std::ptrdiff_t>(begin),
                               agents.begin() + static_cast<std::ptrdiff_t>(end));
    std::vector<std::string> keys;
    for (const int k : who) keys.push_back(key_of(k));
    read_batch(store, keys, who, deadline, found, never);
  }
  return never;
}

std::map<int, StopNotice> agents_that_left(StoreClient& store, const std::vector<int>& agents) {
  std::map<int, StopNotice> out;
  read_keys(store, left_key, agents, Deadline::after(Millis(0)), [&](int k, const uint8_t* data, size_t size) {
    out.emplace(k, decode_stop_notice(std::string(data, data + size)));
  });
  return out;
}

std::vector<int> wait_for_agents(StoreClient& store, const KeyOf& key_of, std::vector<int> waiting, Millis timeout,
                                 const AgentValueSink& found, std::map<int, StopNotice>& left, LeaverScope scope) {
  const auto deadline = Deadline::after(timeout);
  const std::vector<int> all = waiting;
  while (!waiting.empty()) {
    // remaining_ms() is -1 for an unlimited wait: whole slices then, never a busy loop.
    const int64_t rest = deadline.remaining_ms();
    const Millis slice(rest < 0 ? kWaitSlice.count() : std::min<int64_t>(kWaitSlice.count(), rest));
    waiting = read_keys(store, key_of, waiting, Deadline::after(slice), found);
    if (waiting.empty()) break;
    // An agent whose key came and that left afterwards (interrupted while waiting for agent 0's
    // answer) counts too where the caller stops for any leaver: it will not take part.
    const auto gone = agents_that_left(store, scope == LeaverScope::kAll ? all : waiting);
    for (auto& [k, notice] : gone) {
      left.emplace(k, notice);
      waiting.erase(std::remove(waiting.begin(), waiting.end(), k), waiting.end());
    }
    if (scope == LeaverScope::kAll && !gone.empty()) break;
    if (g_interrupt_signal.load() != 0 || deadline.passed()) break;
  }
  return waiting;
}

StopOnSignal::StopOnSignal(StoreClient& c) : c_(c) {
  c_.set_stop_check([] { return g_interrupt_signal.load() != 0; });
}

std::string interrupted_text(const std::string& waiting_for) {
  const int sig = g_interrupt_signal.load();
  return fmt::format("interrupted by signal {} (SIG{}) while waiting for {}", sig,
                     sigabbrev_np(sig) ? sigabbrev_np(sig) : "?", waiting_for);
}

}  // namespace commbench
