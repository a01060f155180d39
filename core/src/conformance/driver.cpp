#include "conformance/driver.h"

#include <algorithm>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "agent/job_token.h"
#include "agent/worker_process.h"
#include "bootstrap/store.h"
#include "common/exit_codes.h"
#include "plugin/probe.h"

namespace commbench {
namespace {

using Clock = std::chrono::steady_clock;

struct RankView {
  std::string phase = "startup";
  std::string error;
  Clock::time_point heard = Clock::now();  // its last line: ranks report every case and step
  bool finished = false;  // it said it ran its last check: an exit code 0 without it is an exit()
};

ConformanceResult result_from(const std::string& s) {
  return s == "pass" ? ConformanceResult::Pass : s == "skip" ? ConformanceResult::Skip : ConformanceResult::Fail;
}

// The last non-empty lines of a rank's log: what it printed before dying.
std::string log_tail(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) all.push_back(l);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += (out.empty() ? "" : " | ") + all[i];
  return out;
}

// Checks of `world` ranks merged: a check fails if it failed on any rank (every failing rank's
// detail, in the order they arrived: the first is often a victim of another rank's failure, e.g.
// a peer that aborted), is skipped only if skipped everywhere, else passes with the lowest rank's
// detail.
class Merger {
 public:
  Merger(int world, std::vector<ConformanceCheck>& out) : world_(world), out_(out), first_(out.size()) {}
  void add(int rank, const std::string& name, ConformanceResult r, const std::string& detail) {
    ConformanceCheck* c = nullptr;
    for (size_t i = first_; i < out_.size(); ++i)
      if (out_[i].name == name) c = &out_[i];
    const std::string d = world_ > 1 && r == ConformanceResult::Fail ? fmt::format("rank {}: {}", rank, detail) : detail;
    if (!c) {
      out_.push_back(ConformanceCheck{name, world_, r, d});
      return;
    }
    if (c->result != ConformanceResult::Fail && r == ConformanceResult::Fail) {
      c->result = r;
      c->detail = d;
    } else if (c->result == ConformanceResult::Fail && r == ConformanceResult::Fail) {
      c->detail += " | " + d;
    } else if (c->result == ConformanceResult::Skip && r == ConformanceResult::Pass) {
      c->result = r;
      c->detail = d;
    }
  }

 private:
  int world_;
  std::vector<ConformanceCheck>& out_;
  size_t first_;
};

// Runs one stage on `world` rank processes; returns false when the backend is unavailable here.
bool run_stage(const ConformanceOptions& opts, const std::string& stage, int world, const std::string& log_dir,
               std::vector<ConformanceCheck>& checks) {
  const std::string token = generate_job_token();
  StoreServerOptions so;
  so.token = token;
  so.log = [](const std::string&) {};
  auto server = StoreServer::start(so);
  std::vector<std::unique_ptr<WorkerProcess>> ranks;
  std::vector<std::string> logs;
  for (int r = 0; r < world; ++r) {
    WorkerLaunch l;
    l.exe = opts.self_exe;
    l.args = {"__conformance_rank", "--rank", std::to_string(r), "--world", std::to_string(world),
              "--store", fmt::format("{}:{}", server->host(), server->port()), "--plugin", opts.plugin_path,
              "--stage", stage, "--op-timeout-ms", std::to_string(opts.op_timeout_ms),
              "--max-bytes", std::to_string(opts.max_bytes),
              "--parent-pid", std::to_string(::getpid())};
    for (const auto& [k, v] : opts.backend_options) {
      l.args.push_back("--option");
      l.args.push_back(k + "=" + v);
    }
    l.env_overrides["COMMBENCH_STORE_TOKEN"] = token;
    l.log_path = fmt::format("{}/{}-{}ranks-rank{}.log", log_dir, stage, world, r);
    logs.push_back(l.log_path);
    ranks.push_back(std::make_unique<WorkerProcess>(l));
  }
  const size_t first_check = checks.size();
  Merger merge(world, checks);
  std::vector<RankView> view(static_cast<size_t>(world));
  auto drain = [&] {
    for (int r = 0; r < world; ++r) {
      std::vector<std::string> lines;
      ranks[r]->read_lines(lines);
      if (!lines.empty()) view[r].heard = Clock::now();
      for (const auto& line : lines) {
        const auto m = nlohmann::json::parse(line, nullptr, false);
        if (!m.is_object()) continue;
        const std::string type = m.value("type", "");
        if (type == "phase") view[r].phase = m.value("phase", "");
        else if (type == "error") view[r].error = m.value("message", "");
        else if (type == "finished") view[r].finished = true;
        else if (type == "check")
          merge.add(r, m.value("name", "?"), result_from(m.value("result", "fail")), m.value("detail", ""));
      }
    }
  };
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(opts.stage_timeout_s * 1000));
  bool unavailable = false;
  std::string failure;
  for (;;) {
    std::vector<pollfd> fds;
    for (auto& w : ranks)
      if (w->result_fd() >= 0) fds.push_back(pollfd{w->result_fd(), POLLIN, 0});
    if (!fds.empty()) ::poll(fds.data(), fds.size(), 50);
    drain();
    bool all_exited = true;
    for (int r = 0; r < world && failure.empty(); ++r) {
      WorkerProcess& w = *ranks[r];
      if (!w.poll_exit()) {
        all_exited = false;
        continue;
      }
      if (w.exited_cleanly()) {
        drain();  // its last lines may have come after the poll
        if (view[r].finished) continue;
        // Exit code 0 from a rank that had checks left: the plugin (or a library it uses) ended
        // the process with exit() or _exit(); the checks it never ran must not read as passed.
        failure = fmt::format("rank {} exited with code 0 during {} before it finished its checks: the process was "
                              "ended from inside (exit() or _exit() in the plugin or a library it uses)",
                              r, view[r].phase);
        if (const std::string tail = log_tail(logs[r], 3); !tail.empty()) failure += fmt::format(" (its log ends: {})", tail);
        continue;
      }
      if (WIFEXITED(w.wait_status()) && WEXITSTATUS(w.wait_status()) == kWorkerExitUnavailable) {
        unavailable = true;
        continue;
      }
      drain();
      failure = fmt::format("rank {} {} during {}", r, w.describe_exit(), view[r].phase);
      if (!view[r].error.empty()) failure += ": " + view[r].error;
      else if (const std::string tail = log_tail(logs[r], 3); !tail.empty()) failure += fmt::format(" (its log ends: {})", tail);
      // A rank that gave up waiting is a victim: name the one that went silent, if any did.
      for (int s = 0; s < world; ++s)
        if (s != r && !ranks[s]->poll_exit() && Clock::now() - view[s].heard > std::chrono::milliseconds(opts.op_timeout_ms)) {
          failure = fmt::format("rank {} hung in {} (silent for {:.0f} s); {}", s, view[s].phase,
                                std::chrono::duration<double>(Clock::now() - view[s].heard).count(), failure);
          break;
        }
    }
    if (all_exited || !failure.empty()) break;
    // Every call a rank makes is bounded by the op timeout (comm_create and the barriers by
    // twice that): a rank silent for longer is inside a plugin call that does not return.
    const auto silent_limit = std::chrono::milliseconds(opts.op_timeout_ms) * 3 + std::chrono::seconds(10);
    for (int r = 0; r < world && failure.empty(); ++r)
      if (!ranks[r]->exited() && Clock::now() - view[r].heard > silent_limit)
        failure = fmt::format("rank {} hung in {}: nothing from it for {:.0f} s, past every timeout it was given "
                              "(a call into the plugin did not return)", r, view[r].phase,
                              std::chrono::duration<double>(Clock::now() - view[r].heard).count());
    if (!failure.empty()) {
      // A rank stuck in a blocking call is often waiting for a peer whose own check failed
      // first (a blocking NCCL init cannot be abandoned when another rank's init failed).
      for (size_t i = first_check; i < checks.size(); ++i)
        if (checks[i].result == ConformanceResult::Fail) {
          failure += fmt::format("; probably waiting for a peer: '{}' failed first ({})", checks[i].name,
                                 checks[i].detail.substr(0, checks[i].detail.find(':')));
          break;
        }
      break;
    }
    if (Clock::now() > deadline) {
      failure = fmt::format("not finished after {:g} s:", opts.stage_timeout_s);
      for (int r = 0; r < world; ++r)
        if (!ranks[r]->exited()) failure += fmt::format(" rank {} in {};", r, view[r].phase);
      failure += " a call into the plugin never returned (or --stage-timeout is too short for this plugin)";
      break;
    }
  }
  for (auto& w : ranks)
    if (!w->exited()) w->terminate(2000);
  drain();
  if (!failure.empty()) checks.push_back(ConformanceCheck{"rank processes", world, ConformanceResult::Fail, failure});
  return !unavailable;
}

// The ABI 1.2 option descriptors (read by the probe): well-formed, or the first problems. A plugin
// without them is not wrong (they are optional), but `validate` cannot check its options.
ConformanceCheck option_descriptor_check(const PluginInfo& info) {
  const char* name = "option descriptors";
  if (!info.option_problems.empty()) {
    std::string detail;
    for (const auto& p : info.option_problems) detail += (detail.empty() ? "" : "; ") + p;
    return ConformanceCheck{name, 0, ConformanceResult::Fail, detail};
  }
  if (!info.options)
    return ConformanceCheck{name, 0, ConformanceResult::Skip,
                            "none exported (ABI 1.2 option_descriptors): validate cannot check this plugin's options"};
  return ConformanceCheck{name, 0, ConformanceResult::Pass,
                          fmt::format("{} option(s), unique names, types known, defaults valid", info.options->size())};
}

// What a probe saw beyond the answer: "printed N bytes (first line: '...')", "left N thread(s)
// running", joined by "and"; "" when nothing.
std::string load_noise(const std::string& output, int threads) {
  std::vector<std::string> parts;
  if (!output.empty()) {
    size_t cut = std::min<size_t>(output.find('\n'), 200);
    while (cut < output.size() && cut > 0 && (static_cast<unsigned char>(output[cut]) & 0xC0) == 0x80) --cut;  // whole characters
    parts.push_back(fmt::format("printed {} bytes (first line: '{}')", output.size(), output.substr(0, cut)));
  }
  if (threads > 0) parts.push_back(fmt::format("left {} thread(s) running", threads));
  return fmt::format("{}", fmt::join(parts, " and "));
}

// docs/plugin-abi.md §1: the entry function is pure, since `plugins`, `validate` and every run's
// probe call it on machines that may lack the hardware. What loading the library did (its
// constructors, and its dependencies' — UCX's VFS thread, a vendor library's banner) is said, not
// failed: the plugin's author may not control it.
ConformanceCheck quiet_load_check(const PluginInfo& info) {
  const char* name = "load quietly";
  const std::string library = load_noise(info.library_output, info.library_threads);
  const std::string also = library.empty() ? "" : fmt::format("; loading the library (its constructors and its "
                                                               "dependencies') {}", library);
  if (const std::string entry = load_noise(info.entry_output, info.entry_threads); !entry.empty())
    return ConformanceCheck{name, 0, ConformanceResult::Fail,
                            fmt::format("its entry function and get_capabilities(NULL) {}: `commbench plugins`, "
                                        "validate and every run's probe call them, on machines without the "
                                        "hardware; print and start threads in init instead (docs/plugin-abi.md §1){}",
                                        entry, also)};
  return ConformanceCheck{name, 0, ConformanceResult::Pass,
                          "entry function and get_capabilities(NULL): no output, no threads" + also};
}

// A fresh folder for the ranks' logs under $TMPDIR (or /tmp); it is removed again when every
// check passed. Throws when it cannot be made: there is no fallback folder, since a passing run
// deletes its log folder whole.
std::string make_log_dir() {
  const char* tmp = std::getenv("TMPDIR");
  const std::string base = tmp && *tmp ? tmp : "/tmp";
  std::string tmpl = base + "/commbench-conformance-XXXXXX";
  if (!::mkdtemp(tmpl.data()))
    throw std::runtime_error(fmt::format("cannot create a folder for the ranks' logs in {}: {}; point TMPDIR at a "
                                         "writable folder", base, std::strerror(errno)));
  return tmpl;
}

}  // namespace

ConformanceReport run_conformance(const ConformanceOptions& opts) {
  ConformanceReport report;
  report.path = opts.plugin_path;
  const PluginInfo info = probe_plugin(opts.plugin_path, opts.self_exe);
  report.plugin = info.name.empty() ? std::filesystem::path(opts.plugin_path).filename().string() : info.name;
  report.version = info.version;
  if (!info.ok()) {
    report.checks.push_back(ConformanceCheck{"load alone", 0, ConformanceResult::Fail, info.load_error});
    return report;
  }
  report.checks.push_back(ConformanceCheck{"load alone", 0, ConformanceResult::Pass,
                                           fmt::format("entry point and static capabilities, ABI {}.{}", info.abi_major, info.abi_minor)});
  report.checks.push_back(option_descriptor_check(info));
  report.checks.push_back(quiet_load_check(info));
  const std::string log_dir = make_log_dir();
  // One process without peers whatever --ranks names: its rows are "alone", not a "1 rank" the
  // user did not ask for.
  const size_t before_options = report.checks.size();
  run_stage(opts, "options", 1, log_dir, report.checks);
  for (size_t i = before_options; i < report.checks.size(); ++i) report.checks[i].ranks = 0;
  for (int world : opts.world_sizes)
    if (!run_stage(opts, "suite", world, log_dir, report.checks)) report.unavailable = true;
  // A blocking op whose peer never posts, in processes of their own (its communicator is left
  // unusable): at 2 ranks, when the run includes 2 or more.
  if (!report.unavailable && std::any_of(opts.world_sizes.begin(), opts.world_sizes.end(), [](int w) { return w >= 2; }))
    run_stage(opts, "deadline", 2, log_dir, report.checks);
  if (report.passed()) std::filesystem::remove_all(log_dir);
  else report.log_dir = log_dir;
  return report;
}

}  // namespace commbench
