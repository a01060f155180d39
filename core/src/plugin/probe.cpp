#include "plugin/probe.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <future>

#include <filesystem>
#include <set>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "common/console_text.h"
#include "plugin/captured_process.h"
#include "plugin/loader.h"
#include "plugin/option_descriptors.h"

namespace commbench {
namespace {

// The last non-empty line of a probe's stderr: usually the one that explains a crash
// ("terminate called after ...", an assertion, the plugin's own last words).
std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of("\r\n \t");
  if (end == std::string::npos) return "";
  size_t start = text.find_last_of('\n', end);
  start = start == std::string::npos ? 0 : start + 1;
  return text.substr(start, end - start + 1);
}

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// The thread ids of this process now (/proc/self/task).
std::set<std::string> thread_ids() {
  std::set<std::string> ids;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc/self/task", ec), end; !ec && it != end; it.increment(ec))
    ids.insert(it->path().filename().string());
  return ids;
}

// Threads started since `before` that are still running 100 ms later: a library's short-lived
// helper thread, or one on its way out, is not counted (nor waited for when there is none).
int threads_left(std::set<std::string>& before) {
  std::set<std::string> now = thread_ids(), left;
  for (const auto& id : now)
    if (!before.count(id)) left.insert(id);
  if (!left.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::set<std::string> later = thread_ids();
    std::erase_if(left, [&](const std::string& id) { return !later.count(id); });
    now.insert(later.begin(), later.end());
  }
  before = std::move(now);
  return static_cast<int>(left.size());
}

// The probe's stderr is cut into what was printed while the library loaded and while its entry
// function and get_capabilities(NULL) ran by these lines (the loader's and a sanitizer's words
// come before and after them, and are nobody's fault).
constexpr std::string_view kMarkLibrary = "@commbench-probe: library@";
constexpr std::string_view kMarkEntry = "@commbench-probe: entry@";
constexpr std::string_view kMarkEnd = "@commbench-probe: end@";

void mark(std::string_view m) {
  std::cout.flush();  // a plugin may write through unsynchronised C++ streams
  std::clog.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  write_all(STDERR_FILENO, "\n" + std::string(m) + "\n");
}

// The text between two marks of `err` (printable, valid UTF-8, cut at 4 KiB); "" when there is
// nothing but white space, or a mark is missing.
std::string between(const std::string& err, std::string_view from, std::string_view to) {
  const size_t a = err.find(from), b = err.find(to);
  if (a == std::string::npos || b == std::string::npos || b < a) return "";
  std::string text = err.substr(a + from.size(), b - a - from.size());
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  text = text.substr(first, text.find_last_not_of(" \t\r\n") + 1 - first);
  if (text.size() > 4096) text = text.substr(0, 4096) + "...";
  std::string out;
  size_t start = 0;
  for (;;) {
    const size_t nl = text.find('\n', start);
    out += console_safe(std::string_view(text).substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    out += '\n';
    start = nl + 1;
  }
  return out;
}

// `err` without the marks' lines, for the last words of a probe that crashed.
std::string without_marks(std::string err) {
  for (std::string_view m : {kMarkLibrary, kMarkEntry, kMarkEnd})
    if (const size_t at = err.find(m); at != std::string::npos) err.erase(at, m.size());
  return err;
}

PluginInfo failed_probe(const std::string& path, std::string why) {
  PluginInfo info;
  info.path = path;
  info.load_error = std::move(why);
  return info;
}

}  // namespace

int run_probe(const std::string& path) {
  // Keep the real stdout for the JSON and point fd 1 at stderr while the plugin is loaded:
  // a library that prints a banner from a constructor must not corrupt the answer.
  std::fflush(stdout);
  const int json_fd = ::dup(STDOUT_FILENO);
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  const int answer_fd = json_fd >= 0 ? json_fd : STDOUT_FILENO;

  nlohmann::json answer;
  int exit_code = kProbeExitOk;
  std::set<std::string> threads = thread_ids();
  int library_threads = 0;
  try {
    mark(kMarkLibrary);
    LoadedPlugin plugin = load_plugin(path, [&] {
      library_threads = threads_left(threads);
      mark(kMarkEntry);
    });
    PluginInfo info;
    info.name = plugin.api.name;
    info.path = path;
    info.version = plugin.api.version ? plugin.api.version : "";
    info.description = plugin.api.description ? plugin.api.description : "";
    info.abi_major = plugin.api.abi_major;
    info.abi_minor = plugin.api.abi_minor;
    info.caps = query_capabilities(plugin.api, nullptr);
    OptionDescriptors described = read_option_descriptors(plugin.api);
    info.options = std::move(described.options);
    info.option_problems = std::move(described.problems);
    info.entry_threads = threads_left(threads);
    info.library_threads = library_threads;
    mark(kMarkEnd);
    answer = to_json(info);
  } catch (const std::exception& e) {
    answer = {{"load_error", e.what()}};
    exit_code = kProbeExitLoadError;
  }
  std::fflush(stdout);
  // `replace`: a plugin's strings (or a loader message) need not be valid UTF-8.
  write_all(answer_fd, answer.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  if (json_fd >= 0) {  // give stdout back, so calling this in a longer-lived process is harmless
    ::dup2(json_fd, STDOUT_FILENO);
    ::close(json_fd);
  }
  return exit_code;
}

PluginInfo probe_plugin(const std::string& path, const std::string& self_exe,
                        std::chrono::milliseconds timeout, const std::map<std::string, std::string>& env) {
  CapturedRun run = run_captured({self_exe, "__probe", path}, timeout, 1 << 20, env);
  const bool answered = run.end == CapturedRun::End::Exited &&
                        (run.exit_code == kProbeExitOk || run.exit_code == kProbeExitLoadError);
  if (run.end == CapturedRun::End::TimedOut) {
    const std::string file = std::filesystem::path(path).filename().string();
    return failed_probe(path, fmt::format(
        "plugin '{}' did not answer the probe within {:.3g} s: loading it or reading its "
        "capabilities hangs (its library constructors, or get_capabilities(NULL)); the probe "
        "process ({} __probe {}) was killed", plugin_name_from_file(file).value_or(file),
        timeout.count() / 1000.0, self_exe, path));
  }
  if (!answered) {
    std::string detail = last_line(without_marks(run.err));
    // The file and the likely cause, as for a hang (a probe: only "signal 11" and our binary).
    return failed_probe(path, fmt::format("loading plugin {} failed: the probe process ({} __probe) {}{}{} (its "
                                          "library constructors, its entry function or get_capabilities(NULL) "
                                          "crashed or exited; `{} __probe {}` runs it alone)",
                                          path, self_exe, describe_end(run, timeout), detail.empty() ? "" : ": ",
                                          detail, self_exe, path));
  }
  // The answer is one line; what a library's destructor prints after it is not part of it.
  nlohmann::json j = nlohmann::json::parse(run.out.substr(0, run.out.find('\n')), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object())
    return failed_probe(path, fmt::format("the probe process ({} __probe) printed no valid JSON: '{}'",
                                          self_exe, last_line(run.out)));
  try {
    PluginInfo info = plugin_info_from_json(j);
    info.path = path;
    if (info.ok()) {
      info.library_output = between(run.err, kMarkLibrary, kMarkEntry);
      info.entry_output = between(run.err, kMarkEntry, kMarkEnd);
      // The capture keeps the first 1 MiB: output that long hid the marks after it.
      if (run.err.find(kMarkEnd) == std::string::npos)
        info.entry_output = "(more than 1 MiB of output while it loaded: the probe kept the first 1 MiB)";
    }
    return info;
  } catch (const std::exception& e) {
    return failed_probe(path, fmt::format("the probe's answer is malformed: {}", e.what()));
  }
}

namespace {

// Probes every file at once, each in its own subprocess: a plugin that hangs costs the caller
// one timeout, not one per plugin after it.
std::vector<PluginInfo> probe_files(const std::vector<PluginFile>& files, const std::string& self_exe,
                                    std::chrono::milliseconds timeout,
                                    const std::map<std::string, std::map<std::string, std::string>>& env = {}) {
  static const std::map<std::string, std::string> kNone;
  std::vector<std::future<PluginInfo>> pending;
  for (const PluginFile& file : files)
    pending.push_back(std::async(std::launch::async, [&file, &self_exe, timeout, &env] {
      const auto own = env.find(file.name);
      PluginInfo info = probe_plugin(file.path, self_exe, timeout, own == env.end() ? kNone : own->second);
      // Experiments name backends by file name: a table that says otherwise is a packaging
      // mistake that would make results carry one name and the listing another.
      if (info.ok() && info.name != file.name)
        info.load_error = fmt::format(
            "the file is named for backend '{}' but the plugin calls itself '{}': rename the file "
            "to {} or fix the name in the plugin's table", file.name, info.name,
            plugin_file_name(info.name));
      info.name = file.name;
      return info;
    }));
  std::vector<PluginInfo> out;
  for (auto& p : pending) out.push_back(p.get());
  return out;
}

}  // namespace

PluginListing list_plugins(const std::vector<SearchDir>& search_path, const std::string& self_exe,
                           std::chrono::milliseconds timeout, const std::optional<std::string>& only) {
  PluginListing listing;
  listing.search_path = search_path;
  PluginScan scan = scan_plugin_dirs(search_dir_paths(search_path));
  listing.shadowed = std::move(scan.shadowed);
  listing.misnamed = std::move(scan.misnamed);
  listing.not_files = std::move(scan.not_files);
  if (only) {
    std::erase_if(scan.found, [&](const PluginFile& f) { return f.name != *only; });
    std::erase_if(listing.shadowed, [&](const PluginScan::Shadowed& s) { return s.file.name != *only; });
  }
  for (PluginInfo& info : probe_files(scan.found, self_exe, timeout))
    listing.plugins.emplace(info.name, std::move(info));
  return listing;
}

PluginCatalog discover_plugins(const std::vector<std::string>& dirs, const std::string& self_exe,
                               const std::optional<std::set<std::string>>& only,
                               std::chrono::milliseconds timeout,
                               const std::map<std::string, std::map<std::string, std::string>>& env) {
  PluginScan scan = scan_plugin_dirs(dirs);
  std::vector<PluginFile> wanted;
  PluginCatalog catalog;
  for (const PluginFile& file : scan.found) {
    if (!only || only->count(file.name)) {
      wanted.push_back(file);
      continue;
    }
    // Known by name (for "did you mean"), never loaded: a plugin no run uses cannot slow or
    // break this command.
    PluginInfo info;
    info.name = file.name;
    info.path = file.path;
    info.load_error = "not probed: no run of this experiment uses it";
    catalog.emplace(file.name, std::move(info));
  }
  for (PluginInfo& info : probe_files(wanted, self_exe, timeout, env)) catalog.insert_or_assign(info.name, std::move(info));
  return catalog;
}

}  // namespace commbench
