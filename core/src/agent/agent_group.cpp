#include "agent/agent_group.h"

#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "agent/agent_keys.h"
#include "agent/execution_monitor.h"
#include "agent/exposure_warnings.h"
#include "agent/job_token.h"
#include "agent/rendezvous_file.h"
#include "bootstrap/deadline.h"
#include "bootstrap/missing_keys.h"
#include "report/execution_json.h"
#include "report/output_file.h"

namespace commbench {

namespace {

KeyOf exec_keys(int index, const char* what) {
  return [index, what](int k) { return exec_key(index, fmt::format("{}/{}", what, k)); };
}

}  // namespace

int AgentGroup::hosts_below(int world) const {
  return static_cast<int>(std::count_if(host_firsts_.begin(), host_firsts_.end(), [&](int r) { return r < world; }));
}

AgentGroup::HostPlace AgentGroup::host_place(int world) const {
  HostPlace p;
  if (solo()) {
    for (int r = 0; r < world; ++r) p.ranks.push_back(r);
    return p;
  }
  p.index = host_index_;
  for (int r : host_ranks_)
    if (r < world) p.ranks.push_back(r);
  if (rank() == 0) {
    p.hosts = hosts_below(world);
  } else if (auto it = execution_hosts_.find(world); it != execution_hosts_.end()) {
    p.hosts = it->second;
  } else {
    p.hosts = 0;  // not started: nobody may build a tree without knowing its size
  }
  return p;
}

int AgentGroup::ranks_on_this_host(int world) const {
  if (solo()) return world;
  // The launcher's count, narrowed by the host names the agents reported: a launcher that
  // deals ranks round-robin over hosts (srun --distribution=cyclic) puts rank 1 elsewhere even
  // when this host has two ranks. (Network namespaces share a host name: hence the minimum.)
  const int named_here = static_cast<int>(host_place(world).ranks.size());
  return std::max(1, std::min({launch_.local_count, world, named_here}));
}

std::string AgentGroup::store_address() const { return fmt::format("{}:{}", host_, port_); }

void AgentGroup::mark_gone(int k, const std::string& why) { gone_.emplace(k, why); }

std::optional<std::pair<int, std::string>> AgentGroup::take_failed_leaver(int world) {
  for (auto it = failed_leavers_.begin(); it != failed_leavers_.end(); ++it)
    if (it->first < world) {
      auto out = *it;
      failed_leavers_.erase(it);
      return out;
    }
  return std::nullopt;
}

bool AgentGroup::peer_left(int world) const {
  return std::any_of(left_.begin(), left_.end(), [&](int k) { return k < world; });
}

void AgentGroup::cancel_execution(int index, const std::string& reason) {
  if (solo() || rank() != 0) return;
  try {
    client_->set(exec_key(index, "start"), store_bytes(reason));
  } catch (const StoreError&) {
    // Agent 0's own store: nothing to tell anyone.
  }
}

std::optional<std::string> AgentGroup::start_execution(int index, int world, Millis timeout) {
  if (solo()) return std::nullopt;
  const std::string start = exec_key(index, "start");
  try {
    if (rank() != 0) {
      client_->set(exec_key(index, fmt::format("ready/{}", rank())), store_bytes("1"));
      std::string verdict;
      for (const auto deadline = Deadline::after(timeout);;) {
        try {
          verdict = store_text(client_->get(
              start, Millis(std::min<int64_t>(kWaitSlice.count(), std::max<int64_t>(0, deadline.remaining_ms())))));
          break;
        } catch (const StoreError& e) {
          if (e.code() != StoreError::Code::Timeout || deadline.passed()) throw;
          if (g_interrupt_signal.load() != 0) {
            // Its "ready" is already written: say so at once, and stop the execution should
            // agent 0 have started it meanwhile, so that nobody waits for this agent's workers.
            const std::string why = interrupted_text(fmt::format("execution {} to start", index));
            announce_leaving({true, why});
            try {
              client_->set(exec_key(index, "abort"), store_bytes(fmt::format("rank {}: {}", rank(), why)));
            } catch (const StoreError&) {
            }
            return why;
          }
        }
      }
      if (!verdict.empty()) return verdict;
      // Only an agent with a rank in this world starts a worker; agent 0 may clear the
      // execution's keys before the others read them.
      if (rank() < world) {
        const std::string hosts = store_text(client_->get(exec_key(index, "hosts"), timeout));
        int n = 0;
        const auto [end, ec] = std::from_chars(hosts.data(), hosts.data() + hosts.size(), n);
        if (ec != std::errc() || end != hosts.data() + hosts.size() || n < 1)
          throw LaunchError(fmt::format("rank 0's agent sent '{}' as the number of hosts of execution {}", hosts, index));
        execution_hosts_[world] = n;
      }
      return std::nullopt;
    }
    std::vector<int> expected;
    for (int k = 1; k < size(); ++k)
      if (!gone_.count(k)) expected.push_back(k);
    std::map<int, StopNotice> left;
    const std::vector<int> never =
        wait_for_agents(*client_, exec_keys(index, "ready"), expected, timeout, [](int, const uint8_t*, size_t) {}, left);
    // An agent can be ready and leave while waiting for "start" (interrupted): one more look.
    for (auto& [k, notice] : agents_that_left(*client_, expected)) left.emplace(k, notice);
    for (const auto& [k, notice] : left) {
      gone_.emplace(k, "it left the job: " + notice.why);
      if (notice.interrupted) left_.insert(k);
      else failed_leavers_.emplace(k, notice.why);
    }
    std::string verdict;
    if (g_interrupt_signal.load() != 0) {
      verdict = interrupted_text(fmt::format("the agents to reach execution {}", index));
    } else {
      for (const int k : never)
        gone_.emplace(k, fmt::format("did not reach execution {} within {} s", index, timeout.count() / 1000.0));
    }
    for (const auto& [k, why] : gone_)
      if (verdict.empty() && k < world) {
        verdict = fmt::format("needs rank {}, whose agent is gone ({})", k, why);
        break;
      }
    // How many hosts the execution spans (its workers build their host tree from it): before
    // "start", so that no agent reads "start" without it.
    client_->set(exec_key(index, "hosts"), store_bytes(std::to_string(hosts_below(world))));
    client_->set(start, store_bytes(verdict));
    if (verdict.empty()) return std::nullopt;
    return verdict;
  } catch (const StoreError& e) {
    lost_store(e, fmt::format("starting execution {}", index));
  }
}

void AgentGroup::lost_store(const StoreError& e, const std::string& doing) const {
  throw LaunchError(fmt::format(
      "rank {} lost the job's store while {}: {}. Rank 0's agent has ended (it finished or failed without this "
      "agent, was killed, or its host went away); this agent stops its workers and ends (what rank 0 wrote "
      "before is on disk, with rank 0's own account of the job)",
      rank(), doing, e.what()));
}

void AgentGroup::raise_abort(int index, const std::string& reason) {
  if (solo()) return;
  try {
    client_->set(exec_key(index, "abort"), store_bytes(reason));
  } catch (const StoreError& e) {
    lost_store(e, fmt::format("telling the others that execution {} failed", index));
  }
}

std::optional<std::string> AgentGroup::abort_reason(int index) {
  if (solo()) return std::nullopt;
  try {
    if (!client_->check(exec_key(index, "abort"))) return std::nullopt;
    return store_text(client_->get(exec_key(index, "abort"), Millis(1000)));
  } catch (const StoreError& e) {
    lost_store(e, fmt::format("watching execution {}", index));
  }
}

void AgentGroup::publish_outcome(int index, const ExecutionOutcome& outcome) {
  try {
    client_->set(exec_key(index, fmt::format("outcome/{}", rank())), store_bytes(nlohmann::json(outcome).dump()));
  } catch (const StoreError& e) {
    lost_store(e, fmt::format("reporting execution {}", index));
  }
}

std::vector<std::optional<ExecutionOutcome>> AgentGroup::gather_outcomes(int index, int count, Millis timeout) {
  std::vector<std::optional<ExecutionOutcome>> out(static_cast<size_t>(std::max(count, 0)));
  std::vector<int> agents;
  for (int k = 1; k < count; ++k) agents.push_back(k);
  try {
    // Agents that never reported stay nullopt: the caller blames them. The wait is a grace for a
    // dead agent's report, and must not keep a signalled agent 0 from writing the job's results
    // (mpirun kills a task 1 s after its SIGTERM): it ends on a signal within 200 ms.
    StopOnSignal stop(*client_);
    std::map<int, StopNotice> left;
    wait_for_agents(*client_, exec_keys(index, "outcome"), agents, timeout, [&](int k, const uint8_t* data, size_t size) {
      try {
        out[static_cast<size_t>(k)] =
            nlohmann::json::parse(data, data + size).get<ExecutionOutcome>();
      } catch (const nlohmann::json::exception&) {
        // An outcome that does not parse is one that never arrived: its agent is blamed likewise.
      }
    }, left);
  } catch (const StoreError& e) {
    if (e.code() != StoreError::Code::Interrupted) lost_store(e, fmt::format("collecting execution {}'s outcomes", index));
  }
  return out;
}

void AgentGroup::clear_execution(int index) {
  // Keys of a finished execution (the workers' and the agents') are never read again; dropping
  // them bounds the store. Best effort: a store that has gone away has nothing left to bound.
  try {
    client_->delete_prefix(fmt::format("exec{}/", index));
    if (!solo()) client_->delete_prefix(fmt::format("agents/exec{}/", index));
  } catch (const StoreError&) {
  }
}

}  // namespace commbench
