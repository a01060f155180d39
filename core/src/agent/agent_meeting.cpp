// How the agents of a launch meet, agree on the job and part (docs/bootstrap.md, "Agents"):
// agent 0 starts the store (or publishes it), the others join it, every agent checks that it
// read the same experiment, and at the end agent 0 tells the others the job's exit code.
// Every wait here for another task ends on a signal to this one (Ctrl-C, the launcher's
// SIGTERM) within a fraction of a second, and agent 0 tells those still waiting why it stopped.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "agent/agent_group.h"
#include "agent/agent_keys.h"
#include "agent/execution_monitor.h"
#include "agent/exposure_warnings.h"
#include "bootstrap/deadline.h"
#include "bootstrap/missing_keys.h"
#include "bootstrap/socket.h"

namespace commbench {

namespace {

// Every task says it, rank 0 and the others alike (docs/launching.md, "Finding rank 0").
constexpr const char* kNoJobId =
    "the launcher gives no job id to name the rendezvous file (Open MPI: OMPI_MCA_ess_base_jobid, "
    "PMIX_NAMESPACE, OMPI_MCA_orte_ess_jobid; MPICH/Hydra: PMI_KVSNAME); set MASTER_ADDR and MASTER_PORT on every "
    "task";

// Agent 0's answer to each agent's join ("<host index> <rank>,<rank>,..." or a StopNotice) and
// its verdict after the agents' own verdicts on the plan ("ok" or a StopNotice).
std::string place_key(int k) { return fmt::format("agents/join/place/{}", k); }
std::string name_key(int k) { return fmt::format("agents/join/name/{}", k); }
// Counts the tasks that joined as rank k: a second one is a task started twice.
std::string claim_key(int k) { return fmt::format("agents/join/claim/{}", k); }
// Rank 0's count of the launch's tasks: every joining task compares its own.
constexpr const char* kWorldKey = "agents/join/world";

std::string world_mismatch(int rank, int tasks, int rank0_tasks) {
  return fmt::format("rank {} was launched as one of {} tasks, rank 0 as one of {}: every task of a launch must see "
                     "the same world size (WORLD_SIZE, SLURM_NTASKS, OMPI_COMM_WORLD_SIZE, PMI_SIZE)",
                     rank, tasks, rank0_tasks);
}
constexpr const char* kGoKey = "agents/go";
constexpr const char* kGo = "ok";

bool signalled() { return g_interrupt_signal.load() != 0; }

std::string this_host() {
  char h[256] = {0};
  ::gethostname(h, sizeof(h) - 1);
  return h;
}

// "<host> <rank>,<rank>,...": the host's number and its ranks, ascending.
bool parse_place(const std::string& text, int& host, std::vector<int>& ranks) {
  const char* p = text.data();
  const char* end = p + text.size();
  auto r = std::from_chars(p, end, host);
  if (r.ec != std::errc() || host < 0 || r.ptr == end || *r.ptr != ' ') return false;
  p = r.ptr + 1;
  ranks.clear();
  while (p < end) {
    int rank = 0;
    r = std::from_chars(p, end, rank);
    if (r.ec != std::errc() || rank < 0 || (!ranks.empty() && rank <= ranks.back())) return false;
    ranks.push_back(rank);
    if (r.ptr == end) break;
    if (*r.ptr != ',') return false;
    p = r.ptr + 1;
  }
  return !ranks.empty();
}

[[noreturn]] void throw_stop(const StopNotice& n) {
  if (n.interrupted) throw LaunchInterrupted(n.why);
  if (n.misconfigured) throw LaunchConfigError(n.why);
  throw LaunchError(n.why);
}

}  // namespace

std::unique_ptr<AgentGroup> AgentGroup::create(const AgentGroupOptions& o) {
  std::unique_ptr<AgentGroup> g(new AgentGroup());
  g->launch_ = o.launch;
  g->token_ = o.token;
  g->build_ = o.build;
  g->warn_ = o.warn;
  g->rendezvous_file_ = o.rendezvous_file;
  const LaunchContext& l = g->launch_;
  if (!l.single_host() && g->token_.empty())
    throw LaunchConfigError(fmt::format(
        "this job spans hosts ({} ranks, {} on this one): its store needs a job token. Set "
        "COMMBENCH_JOB_TOKEN (the same random string for every task) or COMMBENCH_JOB_TOKEN_FILE "
        "(a file readable only by you)", l.agent_count, l.local_count));
  // A job on one host keeps its store on loopback whatever MASTER_ADDR says: nobody elsewhere
  // needs it (COMMBENCH_STORE_BIND still chooses, for whoever asks).
  const bool loopback = l.single_host() && o.bind_host.empty();
  // Without a user token, the job draws its own: agent 0 keeps it (local run) or shares it
  // with the other agents on this host through a file only this user can read.
  if (g->token_.empty() && !g->solo())
    g->token_file_ = std::make_unique<HostTokenFile>(
        l.rendezvous == Rendezvous::kEnv ? fmt::format("port-{}", l.master_port) : "job-" + l.job_id);
  if (g->token_.empty() && l.hosts_store()) g->token_ = generate_job_token();
  if (l.hosts_store()) {
    StoreServerOptions so;
    so.token = g->token_;
    if (l.rendezvous == Rendezvous::kEnv) {
      so.bind_host = loopback ? "127.0.0.1" : o.bind_host.empty() ? l.master_addr : o.bind_host;
      so.port = static_cast<uint16_t>(l.master_port);
    } else if (l.rendezvous == Rendezvous::kFile && !l.single_host()) {
      so.bind_host = o.bind_host.empty() ? l.file_store_host : o.bind_host;
      if (so.bind_host.empty())
        throw LaunchConfigError("mpirun across hosts without MASTER_ADDR: set COMMBENCH_STORE_BIND to an "
                          "address of rank 0's host that the other hosts reach (the store never "
                          "listens on all interfaces by itself)");
    }
    try {
      g->server_ = StoreServer::start(so);
      // Only once the port is ours: a second rank 0 (a task started twice) whose bind fails must
      // not replace the token the first job's ranks are reading.
      if (g->token_file_) g->token_file_->publish(g->token_);
    } catch (const LaunchError&) {
      throw;
    } catch (const StoreError& e) {
      // The advice fits the cause: a port in use may free up (exit 1); an address that does not
      // resolve or is not this host's is the launch's configuration (exit 2).
      const std::string what = fmt::format("rank 0 cannot start the bootstrap store on {}:{}: {}", so.bind_host,
                                           so.port, e.what());
      switch (e.listen_problem()) {
        case StoreError::ListenProblem::NameDoesNotResolve:
          throw LaunchConfigError(what + fmt::format(" ({} does not resolve on rank 0's host: set MASTER_ADDR, or "
                                                     "COMMBENCH_STORE_BIND, to a name or address of that host)",
                                                     so.bind_host));
        case StoreError::ListenProblem::AddressNotHere:
          throw LaunchConfigError(what + fmt::format(" ({} is not an address of rank 0's host, {}: MASTER_ADDR must "
                                                     "name the host where rank 0 runs)",
                                                     so.bind_host, this_host()));
        case StoreError::ListenProblem::PortInUse:
          throw LaunchError(what + " (is another job, or a second rank 0, using that port? Give every task of the "
                                   "launch another MASTER_PORT)");
        default:
          throw LaunchError(what);
      }
    } catch (const std::exception& e) {
      throw LaunchError(fmt::format("rank 0 cannot start the bootstrap store on {}:{}: {}", so.bind_host, so.port,
                                    e.what()));
    }
    if (auto w = wildcard_store_warning(so.bind_host, o.bind_host.empty() ? "MASTER_ADDR" : "COMMBENCH_STORE_BIND")) {
      if (o.warn) o.warn(*w);
      else std::fprintf(stderr, "commbench: %s\n", w->c_str());
    }
    // A store on every interface: agent 0's workers reach it where the other agents do
    // (MASTER_ADDR), not through this host's name, which often resolves to a loopback address
    // here (127.0.1.1) that the leaders of a host tree would then advertise to other hosts.
    const bool wildcard = so.bind_host == "0.0.0.0" || so.bind_host == "::";
    g->host_ = !wildcard                                                   ? g->server_->host()
               : l.rendezvous == Rendezvous::kEnv && l.master_addr != so.bind_host ? l.master_addr
                                                                                   : this_host();
    g->port_ = g->server_->port();
    if (l.rendezvous == Rendezvous::kFile) {
      if (l.job_id.empty()) throw LaunchConfigError(kNoJobId);
      g->published_ = publish_rendezvous_file(g->rendezvous_file_, l.job_id, g->host_, g->port_);
    }
  } else if (l.rendezvous == Rendezvous::kFile) {
    if (l.job_id.empty()) throw LaunchConfigError(kNoJobId);  // at once, as rank 0 does: no file can be named
    std::tie(g->host_, g->port_) = read_rendezvous_file(g->rendezvous_file_, l.job_id, o.join_timeout, signalled);
  } else {
    g->host_ = loopback ? "127.0.0.1" : l.master_addr;
    g->port_ = static_cast<uint16_t>(l.master_port);
  }
  g->join(o.join_timeout);
  return g;
}

AgentGroup::~AgentGroup() {
  // Only the file this agent created: one it refused (planted, not a rendezvous file) or one
  // that replaced it since is not ours to delete.
  remove_published_file(published_);
}


void AgentGroup::connect_to_store(Millis timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const bool token_from_file = token_file_ && !launch_.hosts_store();
  std::optional<std::chrono::steady_clock::time_point> refused_since;  // a listener there said no
  const auto interrupted = [&] {
    return LaunchInterrupted(interrupted_text(fmt::format("rank 0's store at {}:{}", host_, port_)));
  };
  for (;;) {
    if (token_from_file) {
      // With MASTER_ADDR:MASTER_PORT the port is the launch's own, so a store there without its
      // token file has started (read_host_token says so); an address read from a rendezvous
      // file may be a dead job's, which proves nothing.
      token_ = launch_.rendezvous == Rendezvous::kEnv ? read_host_token(*token_file_, host_, port_, deadline, signalled)
                                                      : token_file_->read(deadline, signalled);
      if (signalled()) throw interrupted();
      if (token_.empty())
        throw LaunchError(fmt::format(
            "rank 0 did not share the job token in {} within {} s: is rank 0's task running? If it is, "
            "its job may have started without this task (rank 0 withdraws the token once every rank has "
            "joined: this task was started twice, or late, or belongs to an earlier launch on the same "
            "port). Every task of a one-host launch must run as the same user with the same TMPDIR (or "
            "set COMMBENCH_JOB_TOKEN, the same random string for every task)",
            token_file_->path().string(), timeout.count() / 1000.0));
    }
    const auto left = std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
    // An address read from a rendezvous file may be a dead job's (a rank 0 killed before it
    // could remove it; Open MPI's job ids repeat): try it a second at a time, and read the file
    // again between tries, so that the address of this job's rank 0 is found once it is there.
    const bool address_from_file = launch_.rendezvous == Rendezvous::kFile && !launch_.hosts_store();
    const Millis slice = address_from_file ? std::min(left, Millis(1000)) : left;
    try {
      // Agent 0's own client needs no stop check: its store is right here.
      client_ = StoreClient::connect(host_, port_, std::max(slice, Millis(1)), token_,
                                     launch_.hosts_store() ? StoreClient::StopCheck{} : StoreClient::StopCheck{signalled});
      client_->set_stop_check({});
      return;
    } catch (const StoreError& e) {
      if (e.code() == StoreError::Code::Interrupted) throw interrupted();
      // Nothing listening (or not in time): read the file again and retry. Someone else listening
      // there (a store that rejects our token, or speaks another protocol: the dead job's port
      // reused): retry while the file may still be replaced, 10 s at most, then fail naming it —
      // a wrong token or a mixed build is not left waiting for the whole timeout.
      const bool unreachable = e.code() == StoreError::Code::Connection || e.code() == StoreError::Code::Timeout;
      const auto now = std::chrono::steady_clock::now();
      if (!unreachable && !refused_since) refused_since = now;
      const bool may_be_replaced = unreachable || now - *refused_since < std::chrono::seconds(10);
      if (address_from_file && may_be_replaced && now < deadline) {
        const auto before = std::pair{host_, port_};
        try {
          std::tie(host_, port_) = read_rendezvous_file(rendezvous_file_, launch_.job_id, Millis(200), signalled);
        } catch (const LaunchInterrupted&) {
          throw;
        } catch (const LaunchError&) {
          // Gone or not ours for now (rank 0 replaces it): keep the address and try again.
        }
        if (std::pair{host_, port_} != before) refused_since.reset();
        continue;
      }
      // A token file left by an earlier launch on the same port: rank 0 replaces it before its
      // store accepts anyone, so read it again.
      if (token_from_file && e.code() == StoreError::Code::Rejected && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      throw LaunchError(fmt::format("rank {} cannot reach rank 0's store at {}:{} within {} s: {}",
                                    rank(), host_, port_, timeout.count() / 1000.0, e.what()));
    } catch (const std::exception& e) {
      throw LaunchError(fmt::format("rank {} cannot reach rank 0's store at {}:{} within {} s: {}",
                                    rank(), host_, port_, timeout.count() / 1000.0, e.what()));
    }
  }
}

// The agents meet and learn which of them share a host, in O(N) bytes: each sets its host name,
// agent 0 reads the N names in batches and hands every agent its host's number and rank list.
// (Every agent gathering every name, as before, moved N² × 64 bytes: 16 GiB at 16k agents.)
void AgentGroup::join(Millis timeout) {
  connect_to_store(timeout);
  if (solo()) return;  // one agent: every rank is on this host (host_place)
  if (rank() == 0) {
    map_hosts(timeout);
    // Every agent has set its name, so each is connected with the token: nobody reads the file again.
    if (token_file_) token_file_->withdraw();
  }
  std::string place;
  try {
    StopOnSignal stop(*client_);
    if (rank() != 0) {
      // One task per rank: a task started twice (a requeued or restarted task, a host file that
      // lists a slot twice) would share its rank's keys with the first and leave the job waiting
      // out its timeout for a rank that is there. The second stops here; the job goes on.
      if (client_->add(claim_key(rank()), 1) > 1)
        throw LaunchConfigError(fmt::format(
            "rank {} of this job has already joined: another task was started with the same rank (a task "
            "started twice or requeued, a host file listing a slot twice, or a task of another job using the "
            "same {}); this one stops and the job goes on with the first",
            rank(), launch_.rendezvous == Rendezvous::kEnv ? "MASTER_ADDR:MASTER_PORT and token" : "rendezvous file"));
      // Rank 0's count against this task's: a task counting more or fewer tasks has other ranks
      // in mind for every execution. This task stops, and tells rank 0 (it then stops the others
      // at once) if rank 0 waits for it.
      const std::string world = store_text(client_->get(kWorldKey, timeout));
      if (world != std::to_string(size())) {
        const std::string why = world_mismatch(rank(), size(), std::atoi(world.c_str()));
        client_->set(left_key(rank()), store_bytes(encode_stop_notice({false, why, true})));
        throw LaunchConfigError(why);
      }
      client_->set(name_key(rank()), store_bytes(this_host()));
    }
    // Agent 0 answers once every name is in, or says why not: a little longer than its own wait.
    place = store_text(client_->get(place_key(rank()), timeout + Millis(5000)));
  } catch (const StoreError& e) {
    if (e.code() == StoreError::Code::Interrupted) leave_interrupted("rank 0 to hand out the job's host map");
    if (e.code() != StoreError::Code::Timeout) lost_store(e, "meeting the other agents");
    throw LaunchError(fmt::format("not every task of the launch reached the rendezvous within {} s: rank 0's "
                                  "agent did not hand out the job's host map (is rank 0's task running?)",
                                  timeout.count() / 1000.0));
  }
  if (!parse_place(place, host_index_, host_ranks_)) {
    if (!place.empty() && !std::isdigit(static_cast<unsigned char>(place.front()))) throw_stop(decode_stop_notice(place));
    throw LaunchError(fmt::format("rank 0's agent sent '{}' as this agent's host; expected '<host> <ranks>'", place));
  }
  if (std::find(host_ranks_.begin(), host_ranks_.end(), rank()) == host_ranks_.end())
    throw LaunchError(fmt::format("rank 0's agent sent '{}' as this agent's host; expected '<host> <ranks>' "
                                  "with rank {} among the ranks", place, rank()));
}

void AgentGroup::map_hosts(Millis timeout) {
  client_->set(kWorldKey, store_bytes(std::to_string(size())));
  std::vector<std::string> names(static_cast<size_t>(size()));
  std::vector<int> others;
  for (int k = 1; k < size(); ++k) others.push_back(k);
  names[0] = this_host();
  std::map<int, StopNotice> left;
  // A slice at a time: a signal to this agent, or an agent that left, ends the wait at once.
  const std::vector<int> never = wait_for_agents(*client_, name_key, others, timeout,
                                                 [&](int k, const uint8_t* data, size_t n) {
                                                   names[static_cast<size_t>(k)].assign(reinterpret_cast<const char*>(data), n);
                                                 },
                                                 left, LeaverScope::kAll);
  std::optional<StopNotice> stop;
  if (signalled()) {
    stop = StopNotice{true, "rank 0's task was " + interrupted_text("the other tasks to join")};
  } else if (!left.empty()) {
    const auto& [k, n] = *left.begin();
    // A task that found the launch wrong (world_mismatch) says so itself: keep its words.
    stop = n.misconfigured ? n
                           : StopNotice{n.interrupted, fmt::format("rank {}'s agent left before the job started: {}", k, n.why)};
  } else if (!never.empty()) {
    std::vector<std::string> missing;
    for (int k : never) missing.push_back(name_key(k));
    stop = StopNotice{false, fmt::format("not every task of the launch reached the rendezvous within {} s: {} not arrived",
                                         timeout.count() / 1000.0, describe_missing(missing, "rank"))};
  }
  if (stop) {
    // Every agent learns why at once instead of waiting out its own timeout (those still to
    // come too, should they arrive before this agent's store goes away).
    for (int k = 1; k < size(); ++k) client_->set(place_key(k), store_bytes(encode_stop_notice(*stop)));
    throw_stop(*stop);
  }
  // Hosts numbered by their lowest rank; every agent learns its host's number and ranks.
  std::map<std::string, int> index_of;
  std::vector<std::vector<int>> ranks_of;
  std::vector<int> host_of(names.size());
  for (size_t k = 0; k < names.size(); ++k) {
    auto [it, added] = index_of.emplace(names[k], static_cast<int>(ranks_of.size()));
    if (added) {
      ranks_of.emplace_back();
      host_firsts_.push_back(static_cast<int>(k));
    }
    ranks_of[static_cast<size_t>(it->second)].push_back(static_cast<int>(k));
    host_of[k] = it->second;
  }
  client_->delete_prefix("agents/join/name/");
  std::vector<std::string> lists(ranks_of.size());
  for (size_t h = 0; h < ranks_of.size(); ++h)
    for (int r : ranks_of[h]) lists[h] += fmt::format("{}{}", lists[h].empty() ? "" : ",", r);
  for (int k = size() - 1; k >= 0; --k) {  // agent 0's own last: it reads it back at once
    const auto h = static_cast<size_t>(host_of[static_cast<size_t>(k)]);
    client_->set(place_key(k), store_bytes(fmt::format("{} {}", h, lists[h])));
  }
}

// Agent 0 publishes the plan's digest and the job folder; each agent writes its verdict on the
// digest ("ok" or why not), agent 0 reads them all and answers "ok" or why the job stops.
std::string AgentGroup::agree(const std::string& plan_digest, const std::string& job_folder, Millis timeout) {
  if (solo()) return job_folder;
  if (rank() == 0) {
    // Before the plan: an agent that finds the plan and no build knows rank 0 predates the check.
    client_->set("agents/build", store_bytes(build_.encode()));
    client_->set("agents/plan", store_bytes(plan_digest));
    client_->set("agents/folder", store_bytes(job_folder));
    std::vector<int> others;
    for (int k = 1; k < size(); ++k) others.push_back(k);
    std::map<int, StopNotice> left;
    std::string differs;
    const auto never = wait_for_agents(*client_, agree_key, others, timeout,
                                       [&](int, const uint8_t* d, size_t n) {
                                         if (differs.empty() && std::string(d, d + n) != "ok") differs.assign(d, d + n);
                                       },
                                       left, LeaverScope::kAll);
    std::optional<StopNotice> stop;
    if (!differs.empty()) {
      stop = StopNotice{false, differs, true};  // tasks given different files or options: a wrong launch
    } else if (!left.empty()) {
      const auto& [k, n] = *left.begin();
      stop = StopNotice{n.interrupted, fmt::format("rank {}'s agent left before the job started: {}", k, n.why)};
    } else if (signalled()) {
      stop = StopNotice{true, "rank 0's task was " + interrupted_text("the other agents to agree on the experiment")};
    } else if (!never.empty()) {
      stop = StopNotice{false, fmt::format("rank {}'s agent did not confirm the experiment within {} s", never.front(),
                                           timeout.count() / 1000.0)};
    }
    client_->set(kGoKey, store_bytes(stop ? encode_stop_notice(*stop) : std::string(kGo)));
    if (stop) throw_stop(*stop);
    client_->delete_prefix("agents/join/place/");  // every agent has read its own by now
    client_->delete_prefix("agents/agree/");
    return job_folder;
  }
  std::string go, folder;
  try {
    StopOnSignal stop(*client_);
    const std::string theirs = store_text(client_->get("agents/plan", timeout));
    folder = store_text(client_->get("agents/folder", timeout));
    std::optional<std::string> build;
    if (client_->check("agents/build")) build = store_text(client_->get("agents/build", timeout));
    const auto warn = [&](const std::string& w) {
      if (warn_) warn_(w);
      else std::fprintf(stderr, "commbench: %s\n", w.c_str());
    };
    if (auto why = build_mismatch(rank(), build_, build, warn)) {
      client_->set(agree_key(rank()), store_bytes(*why));
      throw LaunchConfigError(*why);
    }
    if (theirs != plan_digest) {
      const std::string why = fmt::format("rank {} read a different experiment than rank 0 (plan digest {} "
                                          "against {}): every task must run the same file with the same options",
                                          rank(), plan_digest, theirs);
      client_->set(agree_key(rank()), store_bytes(why));
      throw LaunchConfigError(why);
    }
    client_->set(agree_key(rank()), store_bytes("ok"));
    // Agent 0 answers within its own wait for the agents: a little longer than that.
    go = store_text(client_->get(kGoKey, timeout + Millis(5000)));
  } catch (const StoreError& e) {
    if (e.code() == StoreError::Code::Interrupted) leave_interrupted("the other agents to agree on the experiment");
    if (e.code() == StoreError::Code::Timeout)
      throw LaunchError(fmt::format("rank 0's agent did not confirm the experiment within {} s (is rank 0's task "
                                    "running, or stopped?)", timeout.count() / 1000.0));
    lost_store(e, "agreeing on the experiment");
  }
  if (go != kGo) throw_stop(decode_stop_notice(go));
  return folder;
}

void AgentGroup::announce_leaving(const StopNotice& notice) {
  if (solo() || rank() == 0 || !client_) return;
  try {
    client_->set(left_key(rank()), store_bytes(encode_stop_notice(notice)));
  } catch (const std::exception&) {
    // The store is gone: nobody is left to tell.
  }
}

void AgentGroup::leave_interrupted(const std::string& waiting_for) {
  const std::string why = interrupted_text(waiting_for);
  // The wait that the signal ended left the connection out of step: a new one says goodbye.
  try {
    client_ = StoreClient::connect(host_, port_, Millis(2000), token_);
    announce_leaving({true, why});
  } catch (const std::exception&) {
    // Rank 0's store is gone or unreachable: it will not wait for this agent either.
  }
  throw LaunchInterrupted(why);
}

std::optional<int> AgentGroup::wait_for_finish(Millis timeout) {
  try {
    int code = 0;
    {
      StopOnSignal stop(*client_);
      code = std::stoi(store_text(client_->get("agents/exit", timeout)));
    }
    client_->add("agents/left", 1);
    return code;
  } catch (const StoreError& e) {
    if (e.code() == StoreError::Code::Interrupted) leave_interrupted("rank 0 to end the job");
    return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace commbench
