#include "job_harness.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include <fmt/format.h>

namespace commbench::testing {
namespace fs = std::filesystem;

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
static std::string quote(const std::string& s) { return shell_quote(s); }

fs::path install_root() {
  static const fs::path root = [] {
    std::error_code ec;
    fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
    for (; !dir.empty() && dir != dir.root_path(); dir = dir.parent_path())
      if (fs::is_regular_file(dir / "bin" / "commbench", ec)) return dir;
    return fs::path();
  }();
  return root;
}

const std::string& commbench_bin() {
  static const std::string bin = [] {
    if (const char* env = std::getenv("COMMBENCH_TEST_BIN"); env && *env) return std::string(env);
#ifdef COMMBENCH_BIN
    return std::string(COMMBENCH_BIN);
#else
    const fs::path root = install_root();
    return root.empty() ? std::string("commbench") : (root / "bin" / "commbench").string();
#endif
  }();
  return bin;
}

const std::string& plugin_dir() {
  static const std::string dir = [] {
#ifdef COMMBENCH_PLUGIN_DIR
    if (!std::getenv("COMMBENCH_TEST_BIN")) return std::string(COMMBENCH_PLUGIN_DIR);
#endif
    return (fs::path(commbench_bin()).parent_path().parent_path() / "lib" / "commbench" / "plugins").string();
  }();
  return dir;
}

CommandResult run_commbench(const std::vector<std::string>& args, const fs::path& cwd) {
  std::string cmd = "cd " + quote(cwd.string()) + " && ";
  // A conformance run that fails keeps its ranks' logs in a new folder under $TMPDIR, by design;
  // the tests that make it fail on purpose would leave one in /tmp per run. Unless a test chose a
  // TMPDIR itself, those folders go to the test's own folder, which is removed with it.
  const char* tmpdir = std::getenv("TMPDIR");
  if (!args.empty() && args[0] == "conformance" && !(tmpdir && *tmpdir)) cmd += "TMPDIR=" + quote(cwd.string()) + " ";
  cmd += quote(commbench_bin());
  for (const auto& a : args) cmd += " " + quote(a);
  return run_shell(cmd);
}

bool root_and_setpriv() {
  return ::geteuid() == 0 && std::system("command -v setpriv >/dev/null 2>&1") == 0;
}

CommandResult run_commbench_as_nobody(const std::vector<std::string>& args, const fs::path& cwd) {
  std::string cmd = "cd " + quote(cwd.string()) + " && setpriv --reuid=65534 --regid=65534 --clear-groups " +
                    quote(commbench_bin());
  for (const auto& a : args) cmd += " " + quote(a);
  return run_shell(cmd);
}

CommandResult run_shell(const std::string& command) {
  const std::string cmd = command + " 2>&1 </dev/null";
  const auto t0 = std::chrono::steady_clock::now();
  CommandResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

JobDir::JobDir() {
  std::random_device rd;
  dir_ = fs::temp_directory_path() / ("commbench-it-" + std::to_string(rd()));
  fs::create_directories(dir_);
}

JobDir::~JobDir() {
  std::error_code ec;
  if (!::testing::Test::HasFailure()) fs::remove_all(dir_, ec);  // keep evidence of failures
}

fs::path JobDir::write(const std::string& name, const std::string& text) const {
  const fs::path p = dir_ / name;
  std::ofstream(p) << text;
  return p;
}

CommandResult JobDir::run(const fs::path& file, const std::vector<std::string>& extra) const {
  std::vector<std::string> args{"run", file.string(), "-o", (dir_ / "out").string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_commbench(args, dir_);
}

fs::path JobDir::job_folder() const {
  std::vector<fs::path> found;
  if (fs::exists(dir_ / "out"))
    for (const auto& e : fs::directory_iterator(dir_ / "out")) found.push_back(e.path());
  EXPECT_EQ(found.size(), 1u) << "expected exactly one job folder under " << dir_ / "out";
  return found.empty() ? fs::path() : found[0];
}

std::vector<nlohmann::json> JobDir::records(const std::string& type) const {
  std::vector<nlohmann::json> out;
  std::ifstream in(job_folder() / "results.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    if (j.value("type", "") == type) out.push_back(std::move(j));
  }
  return out;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::vector<std::string>> csv_rows(const fs::path& p) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(read_text(p));
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::istringstream l(line);
    for (std::string c; std::getline(l, c, ',');) cells.push_back(c);
    if (!line.empty() && line.back() == ',') cells.emplace_back();
    rows.push_back(cells);
  }
  return rows;
}

bool plugin_built(const char* name) {
  return fs::exists(fs::path(plugin_dir()) / fmt::format("libcommbench_backend_{}.so", name));
}

}  // namespace commbench::testing
