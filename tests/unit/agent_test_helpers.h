// Agents of one torchrun-style launch on this host, joined in threads of this process: the
// unit tests of agent/agent_group.h drive them directly.
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <vector>

#include "agent/agent_group.h"
#include "test_common.h"

namespace commbench::test {

inline AgentGroupOptions agent_options(int k, int count, int port, std::chrono::milliseconds join_timeout) {
  AgentGroupOptions o;
  o.launch.launcher = "torchrun";
  o.launch.agent_rank = o.launch.local_rank = k;
  o.launch.agent_count = o.launch.local_count = count;
  o.launch.rendezvous = Rendezvous::kEnv;
  o.launch.master_addr = "127.0.0.1";
  o.launch.master_port = port;
  o.join_timeout = join_timeout;
  return o;
}

// `count` agents, joined (agent 0 first in the vector).
inline std::vector<std::unique_ptr<AgentGroup>> join_agents(int count, std::chrono::milliseconds join_timeout) {
  const int port = free_port();
  std::vector<std::future<std::unique_ptr<AgentGroup>>> joining;
  for (int k = 0; k < count; ++k)
    joining.push_back(std::async(std::launch::async,
                                 [=] { return AgentGroup::create(agent_options(k, count, port, join_timeout)); }));
  std::vector<std::unique_ptr<AgentGroup>> agents;
  for (auto& j : joining) agents.push_back(j.get());
  return agents;
}

}  // namespace commbench::test
