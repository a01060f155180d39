#include "launch/rank_discovery.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

extern char** environ;

namespace commbench {
namespace {

const std::string* find(const EnvMap& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? nullptr : &it->second;
}

// An integer variable that must be there (the launcher's own promise) and in [min, max].
int integer(const EnvMap& env, const char* launcher, const char* name, int min, int max,
            LaunchContext& c) {
  const std::string* v = find(env, name);
  if (!v)
    throw LaunchError(fmt::format("{} environment without {}: the launcher set some of its "
                                  "variables but not this one; refusing to guess the rank layout",
                                  launcher, name));
  int out = 0;
  const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || end != v->data() + v->size() || out < min || out > max)
    throw LaunchError(fmt::format("{}={} is not valid: expected an integer in [{}, {}]", name, *v, min, max));
  c.sources.push_back(fmt::format("{}={}", name, *v));
  return out;
}

int optional_integer(const EnvMap& env, const char* launcher, const char* name, int min, int max,
                     int fallback, LaunchContext& c) {
  return find(env, name) ? integer(env, launcher, name, min, max, c) : fallback;
}

// A Slurm job or step id: an unsigned 32-bit integer (Slurm's own type); 0 when absent
// and not required.
uint64_t slurm_id(const EnvMap& env, const char* name, bool required, const char* why) {
  const std::string* v = find(env, name);
  if (!v) {
    if (required)
      throw LaunchError(fmt::format("Slurm task without {}: {}; srun sets it: start the tasks with srun", name, why));
    return 0;
  }
  uint64_t out = 0;
  const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (v->empty() || ec != std::errc() || end != v->data() + v->size() || out > 0xffffffffull)
    throw LaunchError(fmt::format("{}={} is not valid: expected Slurm's numeric id (an integer in [0, 4294967295]); "
                                  "{}; srun sets it: do not override it",
                                  name, *v, why));
  return out;
}

void check_ranks(const LaunchContext& c, const char* launcher) {
  if (c.agent_rank >= c.agent_count)
    throw LaunchError(fmt::format("{}: rank {} is not below the world size {}", launcher, c.agent_rank, c.agent_count));
  if (c.local_rank >= c.local_count)
    throw LaunchError(fmt::format("{}: local rank {} is not below the local size {}", launcher, c.local_rank, c.local_count));
  if (c.local_count > c.agent_count)
    throw LaunchError(fmt::format("{}: {} ranks on this host but {} in the job", launcher, c.local_count, c.agent_count));
}

// MASTER_ADDR/MASTER_PORT when given (any launcher): the store's address, no guessing.
bool take_master(const EnvMap& env, const char* launcher, LaunchContext& c) {
  const std::string* addr = find(env, "MASTER_ADDR");
  if (!addr) return false;
  // "[fd00::1]", as URLs write an IPv6 address, is the address inside the brackets.
  c.master_addr = addr->size() > 2 && addr->front() == '[' && addr->back() == ']' ? addr->substr(1, addr->size() - 2)
                                                                                  : *addr;
  c.sources.push_back("MASTER_ADDR=" + *addr);
  c.master_port = integer(env, launcher, "MASTER_PORT", 1, 65535, c);
  c.rendezvous = Rendezvous::kEnv;
  return true;
}

class TorchrunDiscovery : public RankDiscovery {
 public:
  std::string name() const override { return "torchrun"; }
  std::optional<LaunchContext> detect(const EnvMap& env) const override {
    if (!find(env, "RANK") || !find(env, "WORLD_SIZE")) return std::nullopt;
    LaunchContext c;
    c.launcher = "torchrun";
    c.agent_rank = integer(env, "torchrun", "RANK", 0, 1 << 24, c);
    c.agent_count = integer(env, "torchrun", "WORLD_SIZE", 1, 1 << 24, c);
    c.local_rank = optional_integer(env, "torchrun", "LOCAL_RANK", 0, 1 << 24, c.agent_rank, c);
    c.local_count = optional_integer(env, "torchrun", "LOCAL_WORLD_SIZE", 1, 1 << 24, c.agent_count, c);
    if (!take_master(env, "torchrun", c))
      throw LaunchError("RANK and WORLD_SIZE are set but MASTER_ADDR is not: set MASTER_ADDR and "
                        "MASTER_PORT to rank 0's host and a free port (torchrun does)");
    c.job_id = find(env, "TORCHELASTIC_RUN_ID") ? *find(env, "TORCHELASTIC_RUN_ID") : "";
    // torchrun's agent keeps its own TCPStore on MASTER_ADDR:MASTER_PORT for the whole job
    // (static rendezvous: TORCHELASTIC_USE_AGENT_STORE=True, which torch's init_process_group
    // reads the same way): rank 0 cannot listen there. It listens on a port of its own on the
    // same address and publishes it in a rendezvous file named by the run id and MASTER_PORT
    // (the run id is "none" unless --rdzv-id sets it; two jobs on one host differ in port).
    const std::string* agent_store = find(env, "TORCHELASTIC_USE_AGENT_STORE");
    if (agent_store && *agent_store == "True") {
      c.sources.push_back("TORCHELASTIC_USE_AGENT_STORE=True");
      c.rendezvous = Rendezvous::kFile;
      c.file_store_host = c.master_addr;
      c.job_id = fmt::format("torchrun-{}-{}", c.job_id.empty() ? "none" : c.job_id, c.master_port);
    }
    check_ranks(c, "torchrun");
    // Without the local layout commbench cannot tell a one-host job (store on loopback) from one
    // that spans hosts (store on MASTER_ADDR, job token required): guessing either is unsafe.
    if (c.agent_count > 1 && !find(env, "LOCAL_WORLD_SIZE"))
      throw LaunchError(fmt::format(
          "RANK, WORLD_SIZE and MASTER_ADDR are set but LOCAL_WORLD_SIZE is not: commbench cannot "
          "tell whether this job runs on one host or spans hosts. Set LOCAL_WORLD_SIZE (ranks on "
          "this host) and LOCAL_RANK (this rank among them), as torchrun does; a job that spans "
          "hosts also needs COMMBENCH_JOB_TOKEN or COMMBENCH_JOB_TOKEN_FILE"));
    if (c.local_count < c.agent_count && !find(env, "LOCAL_RANK"))
      throw LaunchError(fmt::format(
          "LOCAL_WORLD_SIZE={} < WORLD_SIZE={} but LOCAL_RANK is not set: set LOCAL_RANK (this "
          "rank among the ranks on its host; it selects the GPU), as torchrun does",
          c.local_count, c.agent_count));
    c.reason = "RANK/WORLD_SIZE/MASTER_ADDR in the environment (torchrun, torch.distributed style)";
    return c;
  }
};

// Slurm's tasks-per-node list, "2(x3),1" = {2, 2, 2, 1}; nullopt when it is not one.
std::optional<std::vector<int>> slurm_tasks_per_node(const std::string& text) {
  std::vector<int> out;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    int n = 0, times = 1;
    auto r = std::from_chars(p, end, n);
    if (r.ec != std::errc() || n < 1) return std::nullopt;
    p = r.ptr;
    if (p < end && *p == '(') {
      if (end - p < 3 || p[1] != 'x') return std::nullopt;
      r = std::from_chars(p + 2, end, times);
      if (r.ec != std::errc() || times < 1 || times > (1 << 24) || r.ptr == end || *r.ptr != ')') return std::nullopt;
      p = r.ptr + 1;
    }
    if (out.size() + static_cast<size_t>(times) > (1u << 24)) return std::nullopt;
    out.insert(out.end(), static_cast<size_t>(times), n);
    if (p < end && *p++ != ',') return std::nullopt;
    if (p == end && text.back() == ',') return std::nullopt;
  }
  if (out.empty()) return std::nullopt;
  return out;
}

// The batch script itself is task 0 of the batch step (SLURM_PROCID=0, SLURM_NTASKS of the
// allocation) but has no step id: only srun's tasks have one. Read as srun's task 0 it would wait
// for tasks that were never started.
bool slurm_batch_script(const EnvMap& env) {
  return find(env, "SLURM_PROCID") && !find(env, "SLURM_STEP_ID") && !find(env, "SLURM_STEPID");
}

class SlurmDiscovery : public RankDiscovery {
 public:
  std::string name() const override { return "slurm"; }
  std::optional<LaunchContext> detect(const EnvMap& env) const override {
    // The batch script is not a task of srun (slurm_batch_script): the launchers after this one
    // (mpirun inside the script) or a local run take it.
    if (!find(env, "SLURM_PROCID") || slurm_batch_script(env)) return std::nullopt;
    LaunchContext c;
    c.launcher = "slurm";
    c.agent_rank = integer(env, "Slurm", "SLURM_PROCID", 0, 1 << 24, c);
    c.agent_count = integer(env, "Slurm", "SLURM_NTASKS", 1, 1 << 24, c);
    c.local_rank = integer(env, "Slurm", "SLURM_LOCALID", 0, 1 << 24, c);
    // Tasks on this node: SLURM_NTASKS_PER_NODE is only set when asked for; the step's
    // per-node count is the reliable source for a one-node step.
    const int nnodes = optional_integer(env, "Slurm", "SLURM_STEP_NUM_NODES", 1, 1 << 24,
                                        optional_integer(env, "Slurm", "SLURM_NNODES", 1, 1 << 24, 1, c), c);
    // The step's own per-node list first: SLURM_NTASKS_PER_NODE is the allocation's
    // (sbatch --ntasks-per-node), inherited by every srun step, which may lay its tasks out
    // otherwise (srun -n3 on 2 nodes: "2,1").
    const std::string* list = find(env, "SLURM_STEP_TASKS_PER_NODE");
    if (nnodes == 1) {
      c.local_count = c.agent_count;
    } else if (list && find(env, "SLURM_NODEID")) {
      // srun sets it on every step ("2,1", "4(x3)"), in the order of the step's nodes, which
      // SLURM_NODEID indexes.
      const auto counts = slurm_tasks_per_node(*list);
      if (!counts || counts->size() != static_cast<size_t>(nnodes))
        throw LaunchError(fmt::format("SLURM_STEP_TASKS_PER_NODE={} is not Slurm's tasks-per-node list (e.g. "
                                      "\"2(x3),1\") for the step's {} nodes; unset it and set SLURM_NTASKS_PER_NODE to "
                                      "the tasks on each node",
                                      *list, nnodes));
      const int node = integer(env, "Slurm", "SLURM_NODEID", 0, nnodes - 1, c);
      c.local_count = (*counts)[static_cast<size_t>(node)];
      c.sources.push_back(fmt::format("SLURM_STEP_TASKS_PER_NODE={}", *list));
    } else if (find(env, "SLURM_NTASKS_PER_NODE")) {
      c.local_count = integer(env, "Slurm", "SLURM_NTASKS_PER_NODE", 1, 1 << 24, c);
    } else {
      // Neither: an even share, which keeps the job counted as spanning hosts (a store on the
      // node list's first host, a job token required); said in the sources.
      const int even_share = (c.agent_count + nnodes - 1) / nnodes;
      c.local_count = std::max(1, std::min(even_share, c.agent_count - 1));
      c.sources.push_back(fmt::format("no SLURM_NTASKS_PER_NODE or SLURM_STEP_TASKS_PER_NODE: {} tasks per node "
                                      "assumed (an even share)", c.local_count));
    }
    // The job id names the job's files and, without MASTER_ADDR, its port: every task must read
    // the same one, so it must be there and be Slurm's number.
    const char* why = "it names the job (and, without MASTER_ADDR, its store's port)";
    const uint64_t job_id = slurm_id(env, "SLURM_JOB_ID", true, why);
    const uint64_t step_id = slurm_id(env, "SLURM_STEP_ID", false, why);
    c.job_id = fmt::format("{}.{}", job_id, step_id);
    if (!take_master(env, "Slurm", c)) {
      const std::string* nodes = find(env, "SLURM_STEP_NODELIST");
      if (!nodes) nodes = find(env, "SLURM_JOB_NODELIST");
      if (!nodes) nodes = find(env, "SLURM_NODELIST");
      if (!nodes) throw LaunchError("Slurm task without SLURM_STEP_NODELIST or SLURM_NODELIST: cannot tell where rank 0 runs; set MASTER_ADDR and MASTER_PORT");
      c.master_addr = nnodes == 1 ? "127.0.0.1" : first_slurm_host(*nodes);
      c.sources.push_back("node list " + *nodes);
      // A port every task derives alike from the job and step ids.
      c.master_port = 20000 + static_cast<int>((job_id * 31 + step_id) % 20000);
      c.rendezvous = Rendezvous::kEnv;
    }
    check_ranks(c, "Slurm");
    c.reason = "SLURM_PROCID/SLURM_NTASKS in the environment (srun)";
    return c;
  }
};

class OpenMpiDiscovery : public RankDiscovery {
 public:
  std::string name() const override { return "openmpi"; }
  std::optional<LaunchContext> detect(const EnvMap& env) const override {
    if (!find(env, "OMPI_COMM_WORLD_RANK")) return std::nullopt;
    LaunchContext c;
    c.launcher = "openmpi";
    c.agent_rank = integer(env, "Open MPI", "OMPI_COMM_WORLD_RANK", 0, 1 << 24, c);
    c.agent_count = integer(env, "Open MPI", "OMPI_COMM_WORLD_SIZE", 1, 1 << 24, c);
    c.local_rank = integer(env, "Open MPI", "OMPI_COMM_WORLD_LOCAL_RANK", 0, 1 << 24, c);
    c.local_count = integer(env, "Open MPI", "OMPI_COMM_WORLD_LOCAL_SIZE", 1, 1 << 24, c);
    for (const char* id : {"OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "OMPI_MCA_orte_ess_jobid"})
      if (const std::string* v = find(env, id)) {
        c.job_id = *v;
        break;
      }
    if (!take_master(env, "Open MPI", c)) c.rendezvous = Rendezvous::kFile;
    check_ranks(c, "Open MPI");
    c.reason = "OMPI_COMM_WORLD_* in the environment (Open MPI's mpirun)";
    return c;
  }
};

class PmiDiscovery : public RankDiscovery {
 public:
  std::string name() const override { return "pmi"; }
  std::optional<LaunchContext> detect(const EnvMap& env) const override {
    if (!find(env, "PMI_RANK")) return std::nullopt;
    LaunchContext c;
    c.launcher = "pmi";
    c.agent_rank = integer(env, "PMI", "PMI_RANK", 0, 1 << 24, c);
    c.agent_count = integer(env, "PMI", "PMI_SIZE", 1, 1 << 24, c);
    // MPICH's Hydra gives the local rank as MPI_LOCALRANKID / MPI_LOCALNRANKS.
    c.local_rank = optional_integer(env, "PMI", "MPI_LOCALRANKID", 0, 1 << 24, c.agent_rank, c);
    c.local_count = optional_integer(env, "PMI", "MPI_LOCALNRANKS", 1, 1 << 24, c.agent_count, c);
    // As for torchrun: without the local layout, one host and several cannot be told apart.
    if (c.agent_count > 1 && (!find(env, "MPI_LOCALNRANKS") || !find(env, "MPI_LOCALRANKID")))
      throw LaunchError(fmt::format(
          "PMI_RANK and PMI_SIZE are set but {} is not: commbench cannot tell whether this job "
          "runs on one host or spans hosts. Set MPI_LOCALNRANKS (ranks on this host) and "
          "MPI_LOCALRANKID (this rank among them), as MPICH's Hydra does",
          find(env, "MPI_LOCALNRANKS") ? "MPI_LOCALRANKID" : "MPI_LOCALNRANKS"));
    for (const char* id : {"PMI_KVSNAME", "PMIX_NAMESPACE"})
      if (const std::string* v = find(env, id)) {
        c.job_id = *v;
        break;
      }
    if (!take_master(env, "PMI", c)) c.rendezvous = Rendezvous::kFile;
    check_ranks(c, "PMI");
    c.reason = "PMI_RANK/PMI_SIZE in the environment (MPICH/Hydra mpiexec)";
    return c;
  }
};

class LocalDiscovery : public RankDiscovery {
 public:
  std::string name() const override { return "local"; }
  std::optional<LaunchContext> detect(const EnvMap& env) const override {
    // Variables of launchers commbench does not read: running locally under one of them would
    // start N independent jobs that each believe they are the whole world.
    // A bare RANK or WORLD_SIZE is half of torchrun's variables (the other half went missing).
    for (const char* hint : {"PMIX_RANK", "MV2_COMM_WORLD_RANK", "MPI_LOCALRANKID", "PALS_RANKID",
                             "FLUX_TASK_RANK", "LOCAL_RANK", "RANK", "WORLD_SIZE"})
      if (find(env, hint))
        throw LaunchError(fmt::format(
            "{} is set but no launcher commbench knows was recognised: this process looks like one "
            "task of a parallel launch, and running it alone would measure nothing useful. Set "
            "RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT "
            "(torchrun style), or pass --launcher local to run this process by itself",
            hint));
    LaunchContext c;
    c.reason = "no launcher environment found: one agent starts every rank on this host";
    if (slurm_batch_script(env)) {
      c.reason = "a Slurm batch script (SLURM_PROCID without SLURM_STEP_ID: not a task of srun): local ranks";
      c.note = fmt::format(
          "started in a Slurm batch script (job {}), not by srun: this process starts the ranks itself, on this node "
          "only. To run one task per rank across the allocation, start it with `srun commbench run ...`",
          find(env, "SLURM_JOB_ID") ? *find(env, "SLURM_JOB_ID") : std::string("?"));
    }
    return c;
  }
};

}  // namespace

std::vector<std::unique_ptr<RankDiscovery>> default_discoveries() {
  std::vector<std::unique_ptr<RankDiscovery>> d;
  d.push_back(std::make_unique<TorchrunDiscovery>());
  d.push_back(std::make_unique<SlurmDiscovery>());
  d.push_back(std::make_unique<OpenMpiDiscovery>());
  d.push_back(std::make_unique<PmiDiscovery>());
  d.push_back(std::make_unique<LocalDiscovery>());
  return d;
}

LaunchContext discover_launch(const EnvMap& env, const std::string& forced) {
  if (forced == "local") {
    LaunchContext c;
    c.reason = "--launcher local";
    return c;
  }
  std::vector<std::string> names;
  for (const auto& d : default_discoveries()) {
    names.push_back(d->name());
    if (!forced.empty() && d->name() != forced) continue;
    if (auto c = d->detect(env)) return *c;
    if (forced == "slurm" && slurm_batch_script(env))
      throw LaunchError("--launcher slurm: this is the batch script, not a task of srun (SLURM_PROCID without "
                        "SLURM_STEP_ID); start it with srun");
    if (!forced.empty())
      throw LaunchError(fmt::format("--launcher {}: its environment variables are not set", forced));
  }
  if (!forced.empty())
    throw LaunchError(fmt::format("unknown launcher '{}'; expected one of: {}", forced, fmt::join(names, ", ")));
  return LaunchContext{};
}

EnvMap current_environment() {
  EnvMap env;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

std::string first_slurm_host(const std::string& nodelist) {
  // First entry: up to a comma that is not inside brackets.
  size_t depth = 0, end = 0;
  for (; end < nodelist.size(); ++end) {
    if (nodelist[end] == '[') ++depth;
    else if (nodelist[end] == ']') depth = depth ? depth - 1 : 0;
    else if (nodelist[end] == ',' && depth == 0) break;
  }
  const std::string first = nodelist.substr(0, end);
  const size_t open = first.find('[');
  if (first.empty() || (open != std::string::npos && first.back() != ']'))
    throw LaunchError("cannot read the Slurm node list '" + nodelist + "'; set MASTER_ADDR");
  if (open == std::string::npos) return first;
  // prefix[03-05,09]suffix-less: the first number or range start, zero padding kept.
  const std::string inside = first.substr(open + 1, first.size() - open - 2);
  const size_t stop = inside.find_first_of("-,");
  const std::string number = inside.substr(0, stop);
  if (number.empty() || number.find_first_not_of("0123456789") != std::string::npos)
    throw LaunchError("cannot read the Slurm node list '" + nodelist + "'; set MASTER_ADDR");
  return first.substr(0, open) + number;
}

std::string describe_launch(const LaunchContext& c) {
  const char* rdv = c.rendezvous == Rendezvous::kLocal ? "local (loopback, this agent's own store)"
                    : c.rendezvous == Rendezvous::kEnv ? "address from the environment"
                                                       : "shared file written by rank 0";
  std::string s = fmt::format(
      "launcher      {}\nwhy           {}\nrank          {} of {}\nlocal rank    {} of {} on this host\n"
      "rendezvous    {}\n",
      c.launcher, c.reason, c.agent_rank, c.agent_count, c.local_rank, c.local_count, rdv);
  if (c.rendezvous == Rendezvous::kEnv) s += fmt::format("store         {}:{}\n", c.master_addr, c.master_port);
  if (!c.job_id.empty()) s += fmt::format("job id        {}\n", c.job_id);
  if (!c.sources.empty()) s += fmt::format("read          {}\n", fmt::join(c.sources, " "));
  return s;
}

}  // namespace commbench
