// How the agents of a launch part at the end of a job (docs/bootstrap.md, "Agents"): agent 0
// tells the others the job's exit code once its files are written, and an agent other than 0
// that was interrupted waits for that before it exits.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "agent/agent_group.h"
#include "agent/agent_keys.h"
#include "agent/execution_monitor.h"

namespace commbench {

void AgentGroup::finish(int exit_code) {
  if (solo()) return;
  try {
    client_->set("agents/exit", store_bytes(std::to_string(exit_code)));
    // The others read the exit code before the store goes away (bounded: a dead one is not waited for).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::vector<int> others;
    for (int k = 1; k < size(); ++k)
      if (!gone_.count(k)) others.push_back(k);
    // Agents that announced leaving (interrupted, or ended on an error) will not read it either.
    const int alive = static_cast<int>(others.size() - agents_that_left(*client_, others).size());
    while (std::chrono::steady_clock::now() < deadline && client_->add("agents/left", 0) < alive)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } catch (const StoreError&) {
    // Agent 0's own store: nothing else can be told; the files are written and the code is ours.
  }
}

bool AgentGroup::wait_for_rank0_to_write(Millis timeout) {
  if (solo() || rank() == 0 || !client_) return false;
  // Only a signal after the first second ends the wait: Ctrl-C at a terminal under mpirun gives
  // every task the terminal's SIGINT and mpirun's SIGTERM a moment apart, both for one stop.
  const auto start = std::chrono::steady_clock::now();
  int signals_before = g_interrupt_count.load();
  client_->set_stop_check([start, signals_before]() mutable {
    if (std::chrono::steady_clock::now() - start < std::chrono::seconds(1)) {
      signals_before = g_interrupt_count.load();
      return false;
    }
    return g_interrupt_count.load() > signals_before;
  });
  bool finished = false;
  try {
    client_->get("agents/exit", timeout);
    finished = true;
    // Then until its store closes: agent 0 removes the rendezvous file just before that.
    client_->get("agents/never", Millis(10000));
  } catch (const std::exception&) {
    // Rank 0's store went away (it ended or was killed), the time ran out, or a second signal.
  }
  client_->set_stop_check({});
  return finished;
}

}  // namespace commbench
