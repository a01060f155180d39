// The agents of one job and what they tell each other. In local mode there is one agent and
// this is its own loopback store. Under a launcher (torchrun, srun, mpirun) every launched task
// is an agent hosting one rank: agent 0 hosts the bootstrap store where the launcher says (or
// where it publishes through a rendezvous file), the others connect with the job token, and
// they use the store to agree on the job, start each execution together, stop each other when
// a rank fails, and hand their outcomes to agent 0, which alone writes results.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agent/agent_keys.h"
#include "agent/build_identity.h"
#include "agent/job_token.h"
#include "agent/rendezvous_file.h"
#include "bootstrap/store.h"
#include "launch/rank_discovery.h"
#include "report/reporter.h"

namespace commbench {

struct AgentGroupOptions {
  LaunchContext launch;
  std::string token;            // the user's job token (required when the job spans hosts); "": one per job
  std::string bind_host;        // agent 0's store address override (COMMBENCH_STORE_BIND)
  std::string rendezvous_file;  // Rendezvous::kFile: where agent 0 publishes its address
  Millis join_timeout{120000};  // how long agents wait for each other at the start
  // Where warnings go (a store bound to every interface); empty: stderr.
  std::function<void(const std::string&)> warn;
  // What this task runs, compared with agent 0's when the agents agree on the job: another
  // version stops the job, another build of the same version is warned about.
  BuildIdentity build = BuildIdentity::of_this_process();
};

class AgentGroup {
 public:
  // Starts (agent 0) or finds (others) the store and meets every agent. Throws LaunchError
  // naming what is missing (an agent that never arrived, no token for a multi-host job...).
  static std::unique_ptr<AgentGroup> create(const AgentGroupOptions& options);
  // A task other than rank 0's that stops before it joins (its experiment did not validate on its
  // host): tells rank 0 through its store, so that rank 0 names it at once instead of waiting out
  // the rendezvous for it. Best effort within `timeout` (rank 0 refused too: no store to tell);
  // MASTER_ADDR/MASTER_PORT launches only (a rendezvous file is named by the experiment). True
  // when rank 0's store took the notice.
  static bool leave_before_joining(const AgentGroupOptions& options, const StopNotice& notice, Millis timeout);
  ~AgentGroup();

  int rank() const { return launch_.agent_rank; }
  int size() const { return launch_.agent_count; }
  bool solo() const { return size() == 1; }
  const LaunchContext& launch() const { return launch_; }
  std::string store_address() const;  // host:port for the workers
  // Ranks of an execution of `world` ranks that run on this agent's host (the workers'
  // local_world_size: plugins use it to tell a one-host communicator from one that needs the
  // network).
  int ranks_on_this_host(int world) const;
  // Where this agent's host stands in an execution of `world` ranks: hosts are numbered in the
  // order of their lowest rank, so the hosts of a smaller world are the first ones and keep their
  // numbers. `ranks`: this host's ranks below `world`, ascending. Valid after start_execution
  // (which tells the other agents how many hosts the execution spans).
  struct HostPlace {
    int index = 0;
    int hosts = 1;
    std::vector<int> ranks;
  };
  HostPlace host_place(int world) const;
  // The store's token: the user's, or the one this job drew (never empty). Workers get it in
  // their environment.
  const std::string& token() const { return token_; }

  // Agent 0 sends its plan digest and job folder name; the others check the digest (every
  // agent must have read the same experiment) and get the folder name.
  std::string agree(const std::string& plan_digest, const std::string& job_folder, Millis timeout);
  // All live agents reach execution `index` before any starts its workers. Returns a reason to
  // skip it instead when it needs the rank of an agent that is gone (agent 0 decides and tells
  // the others). Throws LaunchError when agent 0 itself stops answering.
  std::optional<std::string> start_execution(int index, int world, Millis timeout);
  // Agent 0: agent k died (it missed its outcome); its rank cannot take part any more.
  void mark_gone(int k, const std::string& why);
  // Agent 0: whether an agent below `world` left because it was interrupted (rather than died,
  // or left on an error): the job then ends as interrupted.
  bool peer_left(int world) const;
  // Agent 0: an agent below `world` that left on an error of its own (not a signal), with its
  // reason, once: the first execution that needs it fails naming it (the later ones are skipped,
  // as after a killed task), so that the job does not end 0 having lost a rank.
  std::optional<std::pair<int, std::string>> take_failed_leaver(int world);
  // Agent 0, when the job stops before execution `index`: tells the agents waiting to start it
  // (they skip it with `reason` and go on to the job's end instead of waiting it out).
  void cancel_execution(int index, const std::string& reason);
  // An agent other than 0 that ends early (interrupted, an error) says so, so that agent 0
  // stops waiting for it at once and names the reason (best effort: the store may be gone).
  void announce_leaving(const StopNotice& notice);
  // A rank failed: every agent of the execution stops its workers (polled by abort_reason).
  void raise_abort(int index, const std::string& reason);
  std::optional<std::string> abort_reason(int index);
  void publish_outcome(int index, const ExecutionOutcome& outcome);
  // Agent 0: the outcomes of agents 1..count-1 (nullopt where one never reported).
  std::vector<std::optional<ExecutionOutcome>> gather_outcomes(int index, int count, Millis timeout);
  // Agent 0: drops the execution's keys (workers' and agents') from the store.
  void clear_execution(int index);
  // Agent 0 publishes the job's exit code and waits briefly for the others to read it; the
  // others return it (or nullopt when agent 0 vanished).
  void finish(int exit_code);
  std::optional<int> wait_for_finish(Millis timeout);
  // An interrupted agent other than 0, after announce_leaving: waits until agent 0 has written the
  // job's files (its finish) and closed its store (at most 10 s more), or until the store is gone,
  // `timeout` passes or another signal arrives. True when agent 0 finished. A launcher that kills the whole job once one task exits (mpirun does,
  // at once) would otherwise kill agent 0 while it writes the summary.
  bool wait_for_rank0_to_write(Millis timeout);

 private:
  AgentGroup() = default;
  void join(Millis timeout);
  void map_hosts(Millis timeout);
  int hosts_below(int world) const;
  void connect_to_store(Millis timeout);
  // An agent other than 0 whose wait for the others a signal ended: announces leaving on a new
  // connection (the old one is out of step) and throws LaunchInterrupted.
  [[noreturn]] void leave_interrupted(const std::string& waiting_for);
  // Throws the LaunchError of an agent whose store went away (rank 0's agent died).
  [[noreturn]] void lost_store(const StoreError& e, const std::string& doing) const;

  LaunchContext launch_;
  std::string token_;
  BuildIdentity build_;
  std::function<void(const std::string&)> warn_;
  std::unique_ptr<HostTokenFile> token_file_;  // one-host launches without a user token
  std::string rendezvous_file_;
  PublishedFile published_;  // agent 0's rendezvous file, once created (removed at the end)
  std::string host_;
  uint16_t port_ = 0;
  std::unique_ptr<StoreServer> server_;
  std::unique_ptr<StoreClient> client_;
  int host_index_ = 0;               // this agent's host, numbered by lowest rank
  std::vector<int> host_ranks_;      // every rank on this agent's host, ascending
  std::vector<int> host_firsts_;     // agent 0: each host's lowest rank, by host index
  std::map<int, int> execution_hosts_;  // hosts of each started execution (by world)
  std::map<int, std::string> gone_;  // agent 0's list of dead agents, with why
  std::set<int> left_;               // agent 0: those of gone_ that left interrupted
  std::map<int, std::string> failed_leavers_;  // agent 0: those that left on an error, not yet reported
};

}  // namespace commbench
