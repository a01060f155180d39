#include "observe/profiler_command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

namespace commbench {
namespace {

// Words of a template: whitespace separates them, '...' and "..." group (no other shell syntax:
// the command is executed directly, never through a shell).
std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (char c : text) {
    if (quote) {
      if (c == quote) quote = 0;
      else cur += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(cur);
      cur.clear();
      in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(cur);
  return words;
}

std::string replace_all(std::string s, std::string_view what, const std::string& with) {
  for (size_t pos = 0; (pos = s.find(what, pos)) != std::string::npos; pos += with.size())
    s.replace(pos, what.size(), with);
  return s;
}

const char* install_hint(const std::string& tool) {
  if (tool == "perf") return "install it (Debian: apt-get install linux-perf)";
  if (tool == "nsys") return "install NVIDIA Nsight Systems and put nsys on PATH";
  if (tool == "ncu") return "install NVIDIA Nsight Compute and put ncu on PATH";
  return "check the path, or put it on PATH";
}

}  // namespace

std::string profiler_program(const ProfilerSetting& p) {
  if (p.tool != "command") return p.tool;
  const auto words = split_words(p.command);
  return words.empty() ? "" : words.front();
}

std::string find_program(const std::string& program) {
  if (program.empty()) return "";
  if (program.find('/') != std::string::npos) return ::access(program.c_str(), X_OK) == 0 ? program : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = dirs.find(':', start);
    std::string dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "";
}

std::optional<std::string> profiler_problem(const ProfilerSetting& p) {
  const std::string program = profiler_program(p);
  if (!find_program(program).empty()) return std::nullopt;
  return fmt::format("profiler '{}': the program '{}' is not {}; {}, or remove 'profiler'",
                     p.tool == "command" ? p.command : p.tool, program,
                     program.find('/') != std::string::npos ? "an executable file" : "found on PATH",
                     install_hint(p.tool));
}

std::vector<Diagnostic> check_profilers(const Experiment& exp) {
  std::vector<Diagnostic> out;
  for (const RunSpec& run : exp.runs) {
    if (!run.profiler) continue;
    if (auto why = profiler_problem(*run.profiler))
      out.push_back(Diagnostic{Diagnostic::Severity::Error, run.pos_of("profiler"), *why});
    // A rank no execution has would profile nothing, silently (root and peers are checked alike).
    const int largest = run.world_sizes.empty() ? 0 : *std::max_element(run.world_sizes.begin(), run.world_sizes.end());
    for (int r : run.profiler->ranks)
      if (largest > 0 && r >= largest)
        out.push_back(Diagnostic{Diagnostic::Severity::Error, run.pos_of("profiler"),
                                 fmt::format("profiler.ranks names rank {}, but the run's largest world size is {}: "
                                             "ranks count from 0", r, largest)});
    // A typo in a placeholder ("{ouput}") would reach the profiler literally: every rank would
    // write the same file. Only a lowercase word in braces looks like one: perf's event groups
    // ('{cycles,instructions}') and bpftrace's blocks pass as they are.
    if (run.profiler->tool == "command")
      for (const std::string& w : split_words(run.profiler->command))
        for (size_t open = w.find('{'); open != std::string::npos; open = w.find('{', open + 1)) {
          const size_t close = w.find('}', open);
          if (close == std::string::npos || close == open + 1 ||
              w.find_first_not_of("abcdefghijklmnopqrstuvwxyz_", open + 1) != close)
            continue;
          const std::string name = w.substr(open, close - open + 1);
          if (name != "{command}" && name != "{output}" && name != "{rank}")
            out.push_back(Diagnostic{Diagnostic::Severity::Error, run.pos_of("profiler"),
                                     fmt::format("profiler command: '{}' is not a placeholder; the ones there are "
                                                 "{{command}}, {{output}} and {{rank}}", name)});
        }
  }
  return out;
}

std::vector<std::string> profiler_argv(const ProfilerSetting& p, const std::string& output, int rank,
                                       const std::vector<std::string>& worker_argv) {
  std::vector<std::string> words;
  if (p.tool == "perf") {
    words = {"perf", "record", "--quiet", "-o", output + ".perf.data", "--", "{command}"};
  } else if (p.tool == "nsys") {
    // NVTX ranges name the phases and ops; cuda and osrt show the copies and the waits.
    words = {"nsys", "profile", "--trace=cuda,nvtx,osrt", "--force-overwrite=true", "--output", output, "{command}"};
  } else if (p.tool == "ncu") {
    words = {"ncu", "--nvtx", "--force-overwrite", "--target-processes", "all", "--export", output, "{command}"};
  } else {
    words = split_words(p.command);
  }
  std::vector<std::string> argv;
  bool placed = false;
  for (const std::string& w : words) {
    if (w == "{command}") {
      argv.insert(argv.end(), worker_argv.begin(), worker_argv.end());
      placed = true;
      continue;
    }
    argv.push_back(replace_all(replace_all(w, "{output}", output), "{rank}", std::to_string(rank)));
  }
  if (!placed) argv.insert(argv.end(), worker_argv.begin(), worker_argv.end());
  argv[0] = find_program(argv[0]).empty() ? argv[0] : find_program(argv[0]);
  return argv;
}

std::string shell_quote_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    if (!a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,+@%") == std::string::npos)
      out += a;
    else
      out += "'" + replace_all(a, "'", "'\\''") + "'";
  }
  return out;
}

}  // namespace commbench
