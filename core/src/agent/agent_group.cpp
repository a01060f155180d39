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

// Every task says it, rank 0 and the others alike (docs/launching.md, "Finding rank 0").
constexpr const char* kNoJobId =
    "the launcher gives no job id to name the rendezvous file (Open MPI: OMPI_MCA_ess_base_jobid, "
    "PMIX_NAMESPACE, OMPI_MCA_orte_ess_jobid; MPICH/Hydra: PMI_KVSNAME); set MASTER_ADDR and MASTER_PORT on every "
    "task";

Bytes bytes_of(const std::string& s) { return Bytes(s.begin(), s.end()); }
std::string string_of(const Bytes& b) { return std::string(b.begin(), b.end()); }

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

std::string exec_key(int index, const std::string& what) { return fmt::format("agents/exec{}/{}", index, what); }

// Agent 0 reads one key per agent ("ready/<k>", "outcome/<k>") in MULTI_GETs of at most this many
// keys: one round trip per batch instead of one per agent (16,384 per execution at 16k agents).
constexpr size_t kAgentsPerRead = 512;

using AgentValueSink = std::function<void(int, const uint8_t*, size_t)>;

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

// Agent k's key among a set of per-agent keys.
using KeyOf = std::function<std::string(int)>;

// All batches share one deadline, so agents that never wrote cost the wait once, not once each.
// Hands each value that arrived to found(k, bytes) and returns the agents whose key never came.
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

KeyOf exec_keys(int index, const char* what) {
  return [index, what](int k) { return exec_key(index, fmt::format("{}/{}", what, k)); };
}

std::vector<int> read_agent_keys(StoreClient& store, int index, const char* what, const std::vector<int>& agents,
                                 Millis timeout, const AgentValueSink& found) {
  return read_keys(store, exec_keys(index, what), agents, Deadline::after(timeout), found);
}

// An agent that left the job early writes why here (announce_leaving).
std::string left_key(int k) { return fmt::format("agents/gone/{}", k); }
// Each agent's verdict on rank 0's plan digest: "ok" or why it differs (AgentGroup::agree).
std::string agree_key(int k) { return fmt::format("agents/agree/{}", k); }

// Long waits for other agents are taken in slices of this, so that a signal to this agent
// (Ctrl-C, the launcher's SIGTERM) and an agent that announced leaving are seen within it.
constexpr Millis kWaitSlice{1000};

// The agents of `agents` that announced leaving, with why (one MULTI_GET per batch, no wait).
std::map<int, std::string> agents_that_left(StoreClient& store, const std::vector<int>& agents) {
  std::map<int, std::string> out;
  read_keys(store, left_key, agents, Deadline::after(Millis(0)),
            [&](int k, const uint8_t* data, size_t size) { out.emplace(k, std::string(data, data + size)); });
  return out;
}

// Agent 0: waits for the agents' keys (`key_of`) until `timeout`, a slice at a time. Returns the
// agents whose key never came; those that announced leaving are put in `left` instead; stops
// early (returning the rest) when this agent got a signal.
std::vector<int> wait_for_agents(StoreClient& store, const KeyOf& key_of, std::vector<int> waiting, Millis timeout,
                                 const AgentValueSink& found, std::map<int, std::string>& left) {
  const auto deadline = Deadline::after(timeout);
  while (!waiting.empty()) {
    // remaining_ms() is -1 for an unlimited wait: whole slices then, never a busy loop.
    const int64_t rest = deadline.remaining_ms();
    const Millis slice(rest < 0 ? kWaitSlice.count() : std::min<int64_t>(kWaitSlice.count(), rest));
    waiting = read_keys(store, key_of, waiting, Deadline::after(slice), found);
    if (waiting.empty()) break;
    for (auto& [k, why] : agents_that_left(store, waiting)) {
      left.emplace(k, why);
      waiting.erase(std::remove(waiting.begin(), waiting.end(), k), waiting.end());
    }
    if (g_interrupt_signal.load() != 0 || deadline.passed()) break;
  }
  return waiting;
}

std::string interrupted_text(const char* waiting_for) {
  const int sig = g_interrupt_signal.load();
  return fmt::format("interrupted by signal {} (SIG{}) while waiting for {}", sig,
                     sigabbrev_np(sig) ? sigabbrev_np(sig) : "?", waiting_for);
}

}  // namespace

std::unique_ptr<AgentGroup> AgentGroup::create(const AgentGroupOptions& o) {
  std::unique_ptr<AgentGroup> g(new AgentGroup());
  g->launch_ = o.launch;
  g->token_ = o.token;
  g->rendezvous_file_ = o.rendezvous_file;
  const LaunchContext& l = g->launch_;
  if (!l.single_host() && g->token_.empty())
    throw LaunchError(fmt::format(
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
  if (g->token_.empty() && l.hosts_store()) {
    g->token_ = generate_job_token();
    if (g->token_file_) g->token_file_->publish(g->token_);  // before the store accepts anyone
  }
  if (l.hosts_store()) {
    StoreServerOptions so;
    so.token = g->token_;
    if (l.rendezvous == Rendezvous::kEnv) {
      so.bind_host = loopback ? "127.0.0.1" : o.bind_host.empty() ? l.master_addr : o.bind_host;
      so.port = static_cast<uint16_t>(l.master_port);
    } else if (l.rendezvous == Rendezvous::kFile && !l.single_host()) {
      if (o.bind_host.empty())
        throw LaunchError("mpirun across hosts without MASTER_ADDR: set COMMBENCH_STORE_BIND to an "
                          "address of rank 0's host that the other hosts reach (the store never "
                          "listens on all interfaces by itself)");
      so.bind_host = o.bind_host;
    }
    try {
      g->server_ = StoreServer::start(so);
    } catch (const std::exception& e) {
      throw LaunchError(fmt::format("rank 0 cannot start the bootstrap store on {}:{}: {} (is another "
                                    "job, or a second rank 0, using that port?)",
                                    so.bind_host, so.port, e.what()));
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
      if (l.job_id.empty()) throw LaunchError(kNoJobId);
      g->published_ = publish_rendezvous_file(g->rendezvous_file_, l.job_id, g->host_, g->port_);
    }
  } else if (l.rendezvous == Rendezvous::kFile) {
    if (l.job_id.empty()) throw LaunchError(kNoJobId);  // at once, as rank 0 does: no file can be named
    std::tie(g->host_, g->port_) = read_rendezvous_file(g->rendezvous_file_, l.job_id, o.join_timeout);
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
  for (;;) {
    if (token_from_file) {
      token_ = token_file_->read(deadline);
      if (token_.empty())
        throw LaunchError(fmt::format(
            "rank 0 did not share the job token in {} within {} s: is rank 0's task running? Every "
            "task of a one-host launch must run as the same user with the same TMPDIR (or set "
            "COMMBENCH_JOB_TOKEN, the same random string for every task)",
            token_file_->path().string(), timeout.count() / 1000));
    }
    const auto left = std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
    try {
      client_ = StoreClient::connect(host_, port_, std::max(left, Millis(1)), token_);
      return;
    } catch (const StoreError& e) {
      // A token file left by an earlier launch on the same port: rank 0 replaces it before its
      // store accepts anyone, so read it again.
      if (token_from_file && e.code() == StoreError::Code::Rejected && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      throw LaunchError(fmt::format("rank {} cannot reach rank 0's store at {}:{} within {} s: {}",
                                    rank(), host_, port_, timeout.count() / 1000, e.what()));
    } catch (const std::exception& e) {
      throw LaunchError(fmt::format("rank {} cannot reach rank 0's store at {}:{} within {} s: {}",
                                    rank(), host_, port_, timeout.count() / 1000, e.what()));
    }
  }
}

// The agents meet and learn which of them share a host, in O(N) bytes: each sets its host name,
// agent 0 reads the N names in one round trip and hands every agent its host's number and rank
// list. (Every agent gathering every name, as before, moved N² × 64 bytes: 16 GiB at 16k agents.)
// Values of "agents/join/place/<k>": "<host index> <rank>,<rank>,..." or "fail <why>".
void AgentGroup::join(Millis timeout) {
  connect_to_store(timeout);
  agents_ = std::make_unique<Bootstrap>(*client_, "agents/join", rank(), size());
  if (solo()) return;  // one agent: every rank is on this host (host_place)
  const std::string me = this_host();
  const std::string place_key = fmt::format("agents/join/place/{}", rank());
  std::string place;
  try {
    client_->set(fmt::format("agents/join/name/{}", rank()), bytes_of(me));
    if (rank() == 0) {
      map_hosts(timeout);
      // Every agent has set its name, so each is connected with the token: nobody reads the file again.
      if (token_file_) token_file_->withdraw();
    }
    // Agent 0 answers once every name is in, or says why not: a little longer than its own wait.
    place = string_of(client_->get(place_key, timeout + Millis(5000)));
  } catch (const LaunchError&) {
    throw;
  } catch (const StoreError& e) {
    if (e.code() != StoreError::Code::Timeout) lost_store(e, "meeting the other agents");
    throw LaunchError(fmt::format("not every task of the launch reached the rendezvous within {} s: rank 0's "
                                  "agent did not hand out the job's host map (is rank 0's task running?)",
                                  timeout.count() / 1000));
  }
  if (place.rfind("fail ", 0) == 0) throw LaunchError(place.substr(5));
  if (!parse_place(place, host_index_, host_ranks_) ||
      std::find(host_ranks_.begin(), host_ranks_.end(), rank()) == host_ranks_.end())
    throw LaunchError(fmt::format("rank 0's agent sent '{}' as this agent's host; expected '<host> <ranks>' "
                                  "with rank {} among the ranks", place, rank()));
}

void AgentGroup::map_hosts(Millis timeout) {
  std::vector<std::string> keys(static_cast<size_t>(size()));
  for (int k = 0; k < size(); ++k) keys[static_cast<size_t>(k)] = fmt::format("agents/join/name/{}", k);
  std::vector<std::string> names(keys.size());
  try {
    client_->multi_get_each(keys, timeout, [&](size_t k, const uint8_t* data, size_t n) {
      names[k].assign(reinterpret_cast<const char*>(data), n);
    });
  } catch (const StoreError& e) {
    if (e.code() != StoreError::Code::Timeout || e.missing_keys().empty()) throw;
    const std::string why = fmt::format("not every task of the launch reached the rendezvous within {} s: {} not arrived",
                                        timeout.count() / 1000, describe_missing(e.missing_keys(), "rank"));
    // The agents that did arrive learn why at once instead of waiting out their own timeout.
    for (int k = 1; k < size(); ++k)
      if (std::find(e.missing_keys().begin(), e.missing_keys().end(), keys[static_cast<size_t>(k)]) == e.missing_keys().end())
        client_->set(fmt::format("agents/join/place/{}", k), bytes_of("fail " + why));
    throw LaunchError(why);
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
    client_->set(fmt::format("agents/join/place/{}", k), bytes_of(fmt::format("{} {}", h, lists[h])));
  }
}

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

std::string AgentGroup::agree(const std::string& plan_digest, const std::string& job_folder, Millis timeout) {
  if (solo()) return job_folder;
  if (rank() == 0) {
    client_->set("agents/plan", bytes_of(plan_digest));
    client_->set("agents/folder", bytes_of(job_folder));
    // Each agent's verdict on the digest, so that a task that read another file is named here
    // at once (rank 0 once waited out the whole timeout, then blamed the store).
    std::vector<int> others;
    for (int k = 1; k < size(); ++k) others.push_back(k);
    std::map<int, std::string> left;
    std::string differs;
    const auto never = wait_for_agents(*client_, agree_key, others, timeout,
                                       [&](int, const uint8_t* d, size_t n) {
                                         if (differs.empty() && std::string(d, d + n) != "ok") differs.assign(d, d + n);
                                       },
                                       left);
    if (!differs.empty()) throw LaunchError(differs);
    if (!left.empty())
      throw LaunchError(fmt::format("rank {}'s agent left before the job started: {}", left.begin()->first,
                                    left.begin()->second));
    if (g_interrupt_signal.load() != 0) throw LaunchError(interrupted_text("the other agents to agree on the experiment"));
    if (!never.empty())
      throw LaunchError(fmt::format("rank {}'s agent did not confirm the experiment within {} s", never.front(),
                                    timeout.count() / 1000));
    agents_->barrier(timeout);
    client_->delete_prefix("agents/join/place/");  // every agent has read its own by now
    client_->delete_prefix("agents/agree/");
    return job_folder;
  }
  std::string theirs, folder;
  try {
    theirs = string_of(client_->get("agents/plan", timeout));
    folder = string_of(client_->get("agents/folder", timeout));
  } catch (const StoreError& e) {
    lost_store(e, "agreeing on the experiment");
  }
  if (theirs != plan_digest) {
    const std::string why = fmt::format("rank {} read a different experiment than rank 0 (plan digest {} "
                                        "against {}): every task must run the same file with the same options",
                                        rank(), plan_digest, theirs);
    try {
      client_->set(agree_key(rank()), bytes_of(why));
    } catch (const StoreError&) {
    }
    throw LaunchError(why);
  }
  try {
    client_->set(agree_key(rank()), bytes_of("ok"));
  } catch (const StoreError& e) {
    lost_store(e, "agreeing on the experiment");
  }
  agents_->barrier(timeout);
  return folder;
}

void AgentGroup::mark_gone(int k, const std::string& why) { gone_.emplace(k, why); }

bool AgentGroup::peer_left(int world) const {
  return std::any_of(left_.begin(), left_.end(), [&](int k) { return k < world; });
}

void AgentGroup::cancel_execution(int index, const std::string& reason) {
  if (solo() || rank() != 0) return;
  try {
    client_->set(exec_key(index, "start"), bytes_of(reason));
  } catch (const StoreError&) {
    // Agent 0's own store: nothing to tell anyone.
  }
}

void AgentGroup::announce_leaving(const std::string& why) {
  if (solo() || rank() == 0 || !client_) return;
  try {
    client_->set(left_key(rank()), bytes_of(why));
  } catch (const std::exception&) {
    // The store is gone: nobody is left to tell.
  }
}

std::optional<std::string> AgentGroup::start_execution(int index, int world, Millis timeout) {
  if (solo()) return std::nullopt;
  const std::string start = exec_key(index, "start");
  try {
    if (rank() != 0) {
      client_->set(exec_key(index, fmt::format("ready/{}", rank())), bytes_of("1"));
      std::string verdict;
      for (const auto deadline = Deadline::after(timeout);;) {
        try {
          verdict = string_of(client_->get(
              start, Millis(std::min<int64_t>(kWaitSlice.count(), std::max<int64_t>(0, deadline.remaining_ms())))));
          break;
        } catch (const StoreError& e) {
          if (e.code() != StoreError::Code::Timeout || deadline.passed()) throw;
          if (g_interrupt_signal.load() != 0) {
            // Its "ready" is already written: say so at once, and stop the execution should
            // agent 0 have started it meanwhile, so that nobody waits for this agent's workers.
            const std::string why = interrupted_text(fmt::format("execution {} to start", index).c_str());
            announce_leaving(why);
            try {
              client_->set(exec_key(index, "abort"), bytes_of(fmt::format("rank {}: {}", rank(), why)));
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
        const std::string hosts = string_of(client_->get(exec_key(index, "hosts"), timeout));
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
    std::map<int, std::string> left;
    const std::vector<int> never =
        wait_for_agents(*client_, exec_keys(index, "ready"), expected, timeout, [](int, const uint8_t*, size_t) {}, left);
    // An agent can be ready and leave while waiting for "start" (interrupted): one more look.
    for (auto& [k, why] : agents_that_left(*client_, expected)) left.emplace(k, why);
    for (const auto& [k, why] : left) {
      gone_.emplace(k, "it left the job: " + why);
      left_.insert(k);
    }
    std::string verdict;
    if (g_interrupt_signal.load() != 0) {
      verdict = interrupted_text(fmt::format("the agents to reach execution {}", index).c_str());
    } else {
      for (const int k : never)
        gone_.emplace(k, fmt::format("did not reach execution {} within {} s", index, timeout.count() / 1000));
    }
    for (const auto& [k, why] : gone_)
      if (verdict.empty() && k < world) {
        verdict = fmt::format("needs rank {}, whose agent is gone ({})", k, why);
        break;
      }
    // How many hosts the execution spans (its workers build their host tree from it): before
    // "start", so that no agent reads "start" without it.
    client_->set(exec_key(index, "hosts"), bytes_of(std::to_string(hosts_below(world))));
    client_->set(start, bytes_of(verdict));
    if (verdict.empty()) return std::nullopt;
    return verdict;
  } catch (const StoreError& e) {
    lost_store(e, fmt::format("starting execution {}", index));
  }
}

void AgentGroup::lost_store(const StoreError& e, const std::string& doing) const {
  throw LaunchError(fmt::format(
      "rank {} lost the job's store while {}: {}. The store lives in rank 0's agent: it was killed or its "
      "host went away; this agent stops its workers and ends (the measurements rank 0 wrote before are on disk)",
      rank(), doing, e.what()));
}

void AgentGroup::raise_abort(int index, const std::string& reason) {
  if (solo()) return;
  try {
    client_->set(exec_key(index, "abort"), bytes_of(reason));
  } catch (const StoreError& e) {
    lost_store(e, fmt::format("telling the others that execution {} failed", index));
  }
}

std::optional<std::string> AgentGroup::abort_reason(int index) {
  if (solo()) return std::nullopt;
  try {
    if (!client_->check(exec_key(index, "abort"))) return std::nullopt;
    return string_of(client_->get(exec_key(index, "abort"), Millis(1000)));
  } catch (const StoreError& e) {
    lost_store(e, fmt::format("watching execution {}", index));
  }
}

void AgentGroup::publish_outcome(int index, const ExecutionOutcome& outcome) {
  try {
    client_->set(exec_key(index, fmt::format("outcome/{}", rank())), bytes_of(nlohmann::json(outcome).dump()));
  } catch (const StoreError& e) {
    lost_store(e, fmt::format("reporting execution {}", index));
  }
}

std::vector<std::optional<ExecutionOutcome>> AgentGroup::gather_outcomes(int index, int count, Millis timeout) {
  std::vector<std::optional<ExecutionOutcome>> out(static_cast<size_t>(std::max(count, 0)));
  std::vector<int> agents;
  for (int k = 1; k < count; ++k) agents.push_back(k);
  try {
    // Agents that never reported stay nullopt: the caller blames them.
    read_agent_keys(*client_, index, "outcome", agents, timeout, [&](int k, const uint8_t* data, size_t size) {
      try {
        out[static_cast<size_t>(k)] =
            nlohmann::json::parse(data, data + size).get<ExecutionOutcome>();
      } catch (const nlohmann::json::exception&) {
        // An outcome that does not parse is one that never arrived: its agent is blamed likewise.
      }
    });
  } catch (const StoreError& e) {
    lost_store(e, fmt::format("collecting execution {}'s outcomes", index));
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

void AgentGroup::finish(int exit_code) {
  if (solo()) return;
  try {
    client_->set("agents/exit", bytes_of(std::to_string(exit_code)));
    // The others read the exit code before the store goes away (bounded: a dead one is not waited for).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::vector<int> others;
    for (int k = 1; k < size(); ++k)
      if (!gone_.count(k)) others.push_back(k);
    // Agents that announced leaving (interrupted) will not read it either.
    const int alive = static_cast<int>(others.size() - agents_that_left(*client_, others).size());
    while (std::chrono::steady_clock::now() < deadline && client_->add("agents/left", 0) < alive)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } catch (const StoreError&) {
    // Agent 0's own store: nothing else can be told; the files are written and the code is ours.
  }
}

std::optional<int> AgentGroup::wait_for_finish(Millis timeout) {
  try {
    const int code = std::stoi(string_of(client_->get("agents/exit", timeout)));
    client_->add("agents/left", 1);
    return code;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace commbench
