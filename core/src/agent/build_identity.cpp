#include "agent/build_identity.h"

#include <fmt/format.h>

#include "observe/host_metadata.h"

namespace commbench {

BuildIdentity BuildIdentity::of_this_process() { return {COMMBENCH_VERSION, executable_build_id()}; }

std::string BuildIdentity::encode() const { return version + " " + build_id; }

std::optional<std::string> build_mismatch(int rank, const BuildIdentity& mine, const std::optional<std::string>& rank0,
                                          const std::function<void(const std::string&)>& warn) {
  if (!rank0)
    return fmt::format("rank 0 runs an older commbench than rank {} (commbench {}): it does not say its version; every "
                       "task of a job must run the same commbench (install one version on every host)",
                       rank, mine.version);
  const auto space = rank0->find(' ');
  const std::string version = rank0->substr(0, space);
  const std::string build_id = space == std::string::npos ? "" : rank0->substr(space + 1);
  if (version != mine.version)
    return fmt::format("rank {} runs commbench {} and rank 0 commbench {}: every task of a job must run the same "
                       "commbench (install one version on every host, or point every task at the same build)",
                       rank, mine.version, version);
  if (build_id != mine.build_id && !build_id.empty() && !mine.build_id.empty())
    warn(fmt::format("warning: rank {} runs another build of commbench {} than rank 0 (build id {}, rank 0's {}): its "
                     "numbers may not be comparable with the other ranks'; run one build on every host",
                     rank, mine.version, mine.build_id.substr(0, 12), build_id.substr(0, 12)));
  return std::nullopt;
}

}  // namespace commbench
