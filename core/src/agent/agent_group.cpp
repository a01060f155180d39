#include "agent/agent_group.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "agent/exposure_warnings.h"
#include "agent/job_token.h"
#include "agent/rendezvous_file.h"
#include "report/execution_json.h"
#include "report/output_file.h"

namespace commbench {
namespace {

Bytes bytes_of(const std::string& s) { return Bytes(s.begin(), s.end()); }
std::string string_of(const Bytes& b) { return std::string(b.begin(), b.end()); }

std::string this_host() {
  char h[256] = {0};
  ::gethostname(h, sizeof(h) - 1);
  return h;
}

std::string exec_key(int index, const std::string& what) { return fmt::format("agents/exec{}/{}", index, what); }

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
    g->host_ = so.bind_host == "0.0.0.0" ? this_host() : g->server_->host();
    g->port_ = g->server_->port();
    if (l.rendezvous == Rendezvous::kFile) {
      if (l.job_id.empty())
        throw LaunchError("the launcher gives no job id to name the rendezvous file; set MASTER_ADDR and MASTER_PORT");
      publish_rendezvous_file(g->rendezvous_file_, l.job_id, g->host_, g->port_);
    }
  } else if (l.rendezvous == Rendezvous::kFile) {
    std::tie(g->host_, g->port_) = read_rendezvous_file(g->rendezvous_file_, l.job_id, o.join_timeout);
  } else {
    g->host_ = loopback ? "127.0.0.1" : l.master_addr;
    g->port_ = static_cast<uint16_t>(l.master_port);
  }
  g->join(o.join_timeout);
  return g;
}

AgentGroup::~AgentGroup() {
  if (server_ && !rendezvous_file_.empty() && launch_.rendezvous == Rendezvous::kFile) {
    std::error_code ec;
    std::filesystem::remove(rendezvous_file_, ec);
  }
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

void AgentGroup::join(Millis timeout) {
  connect_to_store(timeout);
  agents_ = std::make_unique<Bootstrap>(*client_, "agents/join", rank(), size());
  // Every agent says where it runs; a task that never started shows up as a missing rank.
  std::string me = this_host();
  me.resize(64, '\0');
  std::vector<char> all(64 * static_cast<size_t>(size()));
  try {
    agents_->allgather(me.data(), 64, all.data(), timeout);
  } catch (const std::exception& e) {
    throw LaunchError(fmt::format("not every task of the launch reached the rendezvous within {} s: {}",
                                  timeout.count() / 1000, e.what()));
  }
  for (int k = 0; k < size(); ++k) {
    const char* name = all.data() + 64 * static_cast<size_t>(k);
    hosts_.emplace_back(name, ::strnlen(name, 64));
  }
}

int AgentGroup::ranks_on_this_host(int world) const {
  if (solo()) return world;
  // The launcher's count, narrowed by the host names the agents reported: a launcher that
  // deals ranks round-robin over hosts (srun --distribution=cyclic) puts rank 1 elsewhere even
  // when this host has two ranks. (Network namespaces share a host name: hence the minimum.)
  int named_here = 0;
  for (int r = 0; r < world && r < size(); ++r) named_here += hosts_[static_cast<size_t>(r)] == hosts_[static_cast<size_t>(rank())];
  return std::max(1, std::min({launch_.local_count, world, named_here}));
}

std::string AgentGroup::store_address() const { return fmt::format("{}:{}", host_, port_); }

std::string AgentGroup::agree(const std::string& plan_digest, const std::string& job_folder, Millis timeout) {
  if (solo()) return job_folder;
  if (rank() == 0) {
    client_->set("agents/plan", bytes_of(plan_digest));
    client_->set("agents/folder", bytes_of(job_folder));
    agents_->barrier(timeout);
    return job_folder;
  }
  std::string theirs, folder;
  try {
    theirs = string_of(client_->get("agents/plan", timeout));
    folder = string_of(client_->get("agents/folder", timeout));
  } catch (const StoreError& e) {
    lost_store(e, "agreeing on the experiment");
  }
  if (theirs != plan_digest)
    throw LaunchError(fmt::format("rank {} read a different experiment than rank 0 (plan digest {} "
                                  "against {}): every task must run the same file with the same options",
                                  rank(), plan_digest, theirs));
  agents_->barrier(timeout);
  return folder;
}

void AgentGroup::mark_gone(int k, const std::string& why) { gone_.emplace(k, why); }

std::optional<std::string> AgentGroup::start_execution(int index, int world, Millis timeout) {
  if (solo()) return std::nullopt;
  const std::string start = exec_key(index, "start");
  try {
    if (rank() != 0) {
      client_->set(exec_key(index, fmt::format("ready/{}", rank())), bytes_of("1"));
      const std::string verdict = string_of(client_->get(start, timeout));
      if (verdict.empty()) return std::nullopt;
      return verdict;
    }
    for (int k = 1; k < size(); ++k) {
      if (gone_.count(k)) continue;
      try {
        client_->get(exec_key(index, fmt::format("ready/{}", k)), timeout);
      } catch (const StoreError& e) {
        if (e.code() != StoreError::Code::Timeout) throw;
        gone_.emplace(k, fmt::format("did not reach execution {} within {} s", index, timeout.count() / 1000));
      }
    }
    std::string verdict;
    for (const auto& [k, why] : gone_)
      if (k < world) {
        verdict = fmt::format("needs rank {}, whose agent is gone ({})", k, why);
        break;
      }
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
  std::vector<std::optional<ExecutionOutcome>> out(static_cast<size_t>(count));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int k = 1; k < count; ++k) {
    const auto left = std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
    try {
      const Bytes b = client_->get(exec_key(index, fmt::format("outcome/{}", k)), std::max(left, Millis(1)));
      out[static_cast<size_t>(k)] = nlohmann::json::parse(string_of(b)).get<ExecutionOutcome>();
    } catch (const StoreError& e) {
      if (e.code() != StoreError::Code::Timeout) lost_store(e, fmt::format("collecting execution {}'s outcomes", index));
    } catch (const nlohmann::json::exception&) {
      // An outcome that does not parse is one that never arrived: its agent is blamed below.
    }
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
    const int alive = size() - 1 - static_cast<int>(gone_.size());
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
