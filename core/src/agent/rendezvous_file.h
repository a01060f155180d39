// The rendezvous file of a launch without MASTER_ADDR (mpirun): agent 0 publishes "job-id host
// port" in it, the other agents read it (docs/launching.md, "Finding rank 0 without
// MASTER_ADDR"). The file is where another local user could try to redirect the job, so both
// sides check who can have written it; the store's mutual authentication (bootstrap/auth.h)
// is the second line: a listener that does not know the token learns nothing even if the file
// is forged.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "bootstrap/store.h"

namespace commbench {

// The file agent 0 created, to remove it at the end only if it is still that file.
struct PublishedFile {
  std::string path;
  uint64_t device = 0, inode = 0;
};

// Agent 0: creates `path` exclusively (mode 0600), replacing a stale rendezvous file of its own.
// Throws LaunchError, touching nothing, when the folder can be written by others without the
// sticky bit (anyone there could swap the file), when the file exists and belongs to someone
// else (it was planted), or when it exists and is not a rendezvous file (a path that names the
// experiment file, say, must never be replaced).
PublishedFile publish_rendezvous_file(const std::string& path, const std::string& job_id, const std::string& host,
                                      uint16_t port);

// Removes the file `publish_rendezvous_file` created if it is still there (same device and
// inode); anything else at that path is left alone.
void remove_published_file(const PublishedFile& f);

// The others: rank 0's address, waiting up to `timeout` for a file of this job. A file of another
// job is waited past (stale); one that belongs to another user or that others may write is
// refused at once (LaunchError): it was not written by this job's rank 0. Stops waiting when
// `stop` returns true (LaunchInterrupted).
std::pair<std::string, uint16_t> read_rendezvous_file(const std::string& path, const std::string& job_id,
                                                      Millis timeout, const std::function<bool()>& stop);

}  // namespace commbench
