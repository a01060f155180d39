#include "agent/early_leave.h"

#include <fmt/format.h>

#include "agent/agent_group.h"
#include "agent/agent_keys.h"
#include "agent/job_token.h"

namespace commbench {

bool AgentGroup::leave_before_joining(const AgentGroupOptions& o, const StopNotice& notice, Millis timeout) {
  const LaunchContext& l = o.launch;
  if (l.agent_count <= 1 || l.hosts_store() || l.rendezvous != Rendezvous::kEnv) return false;
  try {
    std::unique_ptr<AgentGroup> g(new AgentGroup());
    g->launch_ = l;
    g->token_ = o.token;
    if (g->token_.empty()) {
      if (!l.single_host()) return false;  // create() refuses it; nothing to connect with
      g->token_file_ = std::make_unique<HostTokenFile>(fmt::format("port-{}", l.master_port));
    }
    g->host_ = l.single_host() && o.bind_host.empty() ? "127.0.0.1" : l.master_addr;
    g->port_ = static_cast<uint16_t>(l.master_port);
    g->connect_to_store(timeout);
    g->client_->set(left_key(l.agent_rank), store_bytes(encode_stop_notice(notice)));
    return true;
  } catch (const std::exception&) {
    // Nobody to tell: rank 0 names this task when its wait ends, as for a task never started.
  }
  return false;
}

bool tell_rank0_before_joining(const LaunchContext& launch, const std::string& why) {
  if (launch.agent_rank == 0 || launch.agent_count <= 1) return false;
  AgentGroupOptions go;
  go.launch = launch;
  const EnvMap env = current_environment();
  try {
    go.token = read_job_token(env);
  } catch (const std::exception&) {
    return false;  // its own error, said when it runs; nothing to connect with
  }
  if (auto it = env.find("COMMBENCH_STORE_BIND"); it != env.end()) go.bind_host = it->second;
  // Long enough for a rank 0 starting alongside; short where rank 0 was refused as well.
  return AgentGroup::leave_before_joining(go, {false, why, true}, Millis(3000));
}

}  // namespace commbench
