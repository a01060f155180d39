// How an agent learns its place in the job. Each launcher (local, torchrun, Slurm, mpirun) is
// one RankDiscovery; the first that recognises the environment wins. Only local mode exists
// today: one agent that starts every rank of each execution on this host.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace commbench {

using EnvMap = std::map<std::string, std::string>;

struct LaunchContext {
  std::string launcher = "local";
  int agent_rank = 0;   // this agent among the job's agents
  int agent_count = 1;  // agents in the job
  int local_rank = 0;   // among agents on this host
  bool hosts_store = true;    // rank 0's agent hosts the bootstrap store
  std::string store_host = "127.0.0.1";
  std::string reason;   // why this launcher was chosen (for --print-env style output)
};

class RankDiscovery {
 public:
  virtual ~RankDiscovery() = default;
  virtual std::string name() const = 0;
  virtual std::optional<LaunchContext> detect(const EnvMap& env) const = 0;
};

// The discoveries in priority order (launchers first, local last: local always matches).
std::vector<std::unique_ptr<RankDiscovery>> default_discoveries();
LaunchContext discover_launch(const EnvMap& env);
EnvMap current_environment();

}  // namespace commbench
