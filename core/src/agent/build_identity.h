// What a task runs, as the agents compare it when they agree on a job (docs/bootstrap.md):
// "<commbench version> <GNU build id of the executable>".
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace commbench {

struct BuildIdentity {
  std::string version;   // COMMBENCH_VERSION
  std::string build_id;  // the executable's GNU build-id note, hex ("" when it has none)

  static BuildIdentity of_this_process();
  std::string encode() const;  // what agent 0 publishes
};

// Agent `rank`'s verdict on agent 0's published identity (`rank0`, nullopt when agent 0 published
// none: a commbench from before the check). Another version is a wrong launch: the reason is
// returned and the job stops. Another build of the same version runs; `warn` is told why its
// numbers may differ.
std::optional<std::string> build_mismatch(int rank, const BuildIdentity& mine, const std::optional<std::string>& rank0,
                                          const std::function<void(const std::string&)>& warn);

}  // namespace commbench
