#include "observe/host_load.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "observe/cpu_list.h"

namespace commbench {
namespace {

std::string proc_root() {
  const char* r = std::getenv("COMMBENCH_PROC_ROOT");
  return r && *r ? r : "/proc";
}

// procs_running of /proc/stat: tasks on a run queue right now, this reader included.
std::optional<int> procs_running(const std::string& root) {
  std::ifstream f(root + "/stat");
  std::string key;
  for (std::string line; std::getline(f, line);) {
    std::istringstream in(line);
    int n = 0;
    if (in >> key >> n && key == "procs_running") return n;
  }
  return std::nullopt;
}

}  // namespace

HostLoad sample_host_load(int ranks_here) {
  HostLoad h;
  const std::string root = proc_root();
  h.ranks_here = ranks_here;
  h.cpus = static_cast<int>(affinity_cpus().size());
  std::ifstream la(root + "/loadavg");
  if (!(la >> h.load1 >> h.load5 >> h.load15) || h.cpus <= 0) return h;
  // One read is a snapshot of a moving queue: the median of five reads 5 ms apart.
  std::vector<int> reads;
  for (int i = 0; i < 5; ++i) {
    if (auto n = procs_running(root)) reads.push_back(*n);
    if (i < 4) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (reads.empty()) return h;
  std::sort(reads.begin(), reads.end());
  h.runnable_others = std::max(0, reads[reads.size() / 2] - 1);  // minus this agent, which is reading
  h.sampled = true;
  return h;
}

std::optional<std::string> host_load_warning(const HostLoad& h) {
  if (!h.busy()) return std::nullopt;
  const std::string what = h.oversubscribed() ? "oversubscribed machine" : "busy machine";
  return fmt::format("{}: {} rank{} + {} other runnable task{} on {} CPU{} (load average {:.1f}); the times include "
                     "waiting for a CPU — quiet the machine{} before publishing them",
                     what, h.ranks_here, h.ranks_here == 1 ? "" : "s", h.runnable_others,
                     h.runnable_others == 1 ? "" : "s", h.cpus, h.cpus == 1 ? "" : "s", h.load1,
                     h.oversubscribed() ? " or run fewer ranks per host" : "");
}

nlohmann::json to_json(const HostLoad& h) {
  if (!h.sampled) return nlohmann::json::object();
  nlohmann::json j{{"cpus", h.cpus},
                   {"load_average", {h.load1, h.load5, h.load15}},
                   {"runnable_others", h.runnable_others},
                   {"ranks_here", h.ranks_here},
                   {"busy", h.busy()},
                   {"oversubscribed", h.oversubscribed()}};
  if (auto w = host_load_warning(h)) j["warning"] = *w;
  return j;
}

void from_json(const nlohmann::json& j, HostLoad& h) {
  h = HostLoad{};
  if (!j.is_object() || !j.contains("cpus")) return;
  h.sampled = true;
  h.cpus = j.value("cpus", 0);
  if (j.contains("load_average") && j["load_average"].is_array() && j["load_average"].size() == 3) {
    h.load1 = j["load_average"][0].get<double>();
    h.load5 = j["load_average"][1].get<double>();
    h.load15 = j["load_average"][2].get<double>();
  }
  h.runnable_others = j.value("runnable_others", 0);
  h.ranks_here = j.value("ranks_here", 0);
}

}  // namespace commbench
