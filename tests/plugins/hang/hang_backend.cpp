// Test plugin "hang": a working backend (see ../common/fault_backend.h) in which one rank stops
// responding on purpose, to prove that the run timeout stops a stuck worker (SIGTERM, then SIGKILL)
// and the job goes on.
//
// Options ([run.options.hang] in an experiment):
//   hang_rank  = rank that hangs (default 1)
//   hang_after = posts that rank completes before hanging (default 3: it hangs in its 4th post)
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "../common/fault_backend.h"

namespace cbtest {
namespace {
int64_t g_hang_rank = 1;
int64_t g_hang_after = 3;
}  // namespace

const char* const kPluginName = "hang";
const char* const kPluginDescription = "test plugin: one rank hangs on purpose at a chosen post";
const std::vector<std::string> kOptionKeys = {"hang_rank", "hang_after"};

void configure(const Options& options, const cb_host_services&) {
  g_hang_rank = int_option(options, "hang_rank", 1);
  g_hang_after = int_option(options, "hang_after", 3);
  if (g_hang_after < 0) throw std::invalid_argument("option hang_after must be >= 0");
}

void after_allreduce(const cb_host_services&, float*, size_t) {}

void before_post(const cb_host_services& host, uint64_t post_index) {
  if (host.rank != g_hang_rank || post_index != static_cast<uint64_t>(g_hang_after)) return;
  std::string what = "hang: rank " + std::to_string(host.rank) + " hanging on purpose in post " +
                     std::to_string(post_index);
  host.log(host.ctx, CB_LOG_ERROR, what.c_str());
  // A plain sleep: default signal dispositions stay, so SIGTERM (or SIGKILL) from the agent ends it.
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

}  // namespace cbtest
