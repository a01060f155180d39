// How an agent learns its place in the job. Each launcher (torchrun, Slurm, Open MPI, MPICH/PMI,
// local) is one RankDiscovery; the first that recognises the environment wins, in the order of
// default_discoveries(). docs/launching.md says what each reads and why.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace commbench {

using EnvMap = std::map<std::string, std::string>;

// How rank 0's store address reaches the other agents.
enum class Rendezvous {
  kLocal,  // one agent: the store is its own, on loopback
  kEnv,    // MASTER_ADDR/MASTER_PORT (torchrun, or set by hand), or the Slurm node list
  kFile,   // rank 0 writes host:port to a file every agent can read (mpirun without MASTER_ADDR)
};

struct LaunchContext {
  std::string launcher = "local";
  int agent_rank = 0;   // this agent among the job's agents (= the rank it hosts)
  int agent_count = 1;  // agents in the job
  int local_rank = 0;   // among agents on this host (selects a GPU)
  int local_count = 1;  // agents on this host
  Rendezvous rendezvous = Rendezvous::kLocal;
  std::string master_addr = "127.0.0.1";  // rank 0's host, as the other agents reach it
  int master_port = 0;                    // 0: the kernel picks (local and file rendezvous)
  std::string job_id;                     // the launcher's job/step id, names the rendezvous file
  // File rendezvous only: where rank 0's store listens across hosts when the launcher says
  // (torchrun's MASTER_ADDR, whose port its own agent holds); "": COMMBENCH_STORE_BIND must.
  std::string file_store_host;
  std::vector<std::string> sources;       // the variables that decided, "NAME=value"
  std::string reason;                     // why this launcher was chosen, in words
  std::string note;                       // said once on stderr when a run starts ("" : nothing)

  bool hosts_store() const { return agent_rank == 0; }
  bool single_host() const { return local_count == agent_count; }
};

// A launcher environment that is there but incomplete or contradictory: commbench refuses to
// guess (running N independent one-rank jobs would be the silent failure, nccl-tests #213).
class LaunchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A launch the user's setup rules out before any rank runs: no job token across hosts, a bad
// COMMBENCH_* variable, a token or rendezvous file refused, a rank started twice. Like an
// experiment that does not validate, it exits 2 (nothing ran; retrying will not help): not 1,
// which says an execution failed.
class LaunchConfigError : public LaunchError {
 public:
  using LaunchError::LaunchError;
};

// A launch ended by a signal (Ctrl-C, the launcher's SIGTERM), to this task or to the task whose
// signal ended the job: the task exits 130 like an interrupted job, not 1 like a failed launch.
class LaunchInterrupted : public LaunchError {
 public:
  using LaunchError::LaunchError;
};

class RankDiscovery {
 public:
  virtual ~RankDiscovery() = default;
  virtual std::string name() const = 0;
  // nullopt: not this launcher. Throws LaunchError when it is, but the environment is unusable.
  virtual std::optional<LaunchContext> detect(const EnvMap& env) const = 0;
};

// The discoveries in priority order: torchrun, Slurm, Open MPI, MPICH/PMI, local (always matches).
std::vector<std::unique_ptr<RankDiscovery>> default_discoveries();
// `forced`: a launcher name from --launcher ("" = detect).
LaunchContext discover_launch(const EnvMap& env, const std::string& forced = "");
EnvMap current_environment();

// The first host of a Slurm node list: "node[03-05,09],gpu1" -> "node03". Throws LaunchError
// on a list it cannot read.
std::string first_slurm_host(const std::string& nodelist);

// Text for `commbench run --print-env`.
std::string describe_launch(const LaunchContext& c);

}  // namespace commbench
