#include "plugin/probe.h"

#include <unistd.h>

#include <cstdio>
#include <future>

#include <filesystem>

#include <fmt/format.h>

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

// Threads of this process now (/proc/self/task); -1 when it cannot be read.
int thread_count() {
  std::error_code ec;
  int n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/task", ec), end; !ec && it != end; it.increment(ec)) ++n;
  return ec ? -1 : n;
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
  const int threads_before = thread_count();
  try {
    LoadedPlugin plugin = load_plugin(path);
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
    const int threads_after = thread_count();
    if (threads_before > 0 && threads_after > threads_before) info.load_threads = threads_after - threads_before;
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
    std::string detail = last_line(run.err);
    // The file and the likely cause, as for a hang (a probe: only "signal 11" and our binary).
    return failed_probe(path, fmt::format("loading plugin {} failed: the probe process ({} __probe) {}{}{} (its "
                                          "library constructors, its entry function or get_capabilities(NULL) "
                                          "crashed or exited; `{} __probe {}` runs it alone)",
                                          path, self_exe, describe_end(run, timeout), detail.empty() ? "" : ": ",
                                          detail, self_exe, path));
  }
  nlohmann::json j = nlohmann::json::parse(run.out, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object())
    return failed_probe(path, fmt::format("the probe process ({} __probe) printed no valid JSON: '{}'",
                                          self_exe, last_line(run.out)));
  try {
    PluginInfo info = plugin_info_from_json(j);
    info.path = path;
    // The probe itself writes nothing else: its stderr is what the plugin printed (fd 1 included).
    if (info.ok() && run.err.find_first_not_of(" \t\r\n") != std::string::npos)
      info.load_output = run.err.size() > 4096 ? run.err.substr(0, 4096) + "…" : run.err;
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
