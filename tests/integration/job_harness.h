// Runs the real commbench binary in a temporary folder and reads back what it wrote.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace commbench::testing {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr interleaved
  double seconds = 0;
};

// The commbench under test and its plugin folder. $COMMBENCH_TEST_BIN first; else the path the
// build compiled in (COMMBENCH_BIN, integration tests); else, for binaries that travel in the
// release tarball with no build path inside (the GPU tests), `bin/commbench` in the nearest folder
// above this executable (build/bin from build/tests/gpu, <prefix>/bin from <prefix>/libexec/commbench).
// The plugins are in <that bin>/../lib/commbench/plugins in both layouts.
const std::string& commbench_bin();
const std::string& plugin_dir();
// The folder holding bin/ (the build or install root), "" when commbench_bin() was given.
std::filesystem::path install_root();

// Runs `commbench <args>` from `cwd`, capturing output.
CommandResult run_commbench(const std::vector<std::string>& args, const std::filesystem::path& cwd);
// Runs a shell command line (stdout and stderr together, stdin from /dev/null).
CommandResult run_shell(const std::string& command);
// `s` quoted for sh.
std::string shell_quote(const std::string& s);
// `commbench <args>` from `cwd` as user/group 65534 (nobody) through setpriv; the caller skips
// unless root_and_setpriv() says this can work.
CommandResult run_commbench_as_nobody(const std::vector<std::string>& args, const std::filesystem::path& cwd);
bool root_and_setpriv();

class JobDir {
 public:
  // A fresh temporary folder holding experiment files and results.
  JobDir();
  ~JobDir();
  const std::filesystem::path& path() const { return dir_; }
  std::filesystem::path write(const std::string& name, const std::string& text) const;
  // Runs `commbench run FILE -o <tmp>/out [extra]`.
  CommandResult run(const std::filesystem::path& file, const std::vector<std::string>& extra = {}) const;
  // The single job folder under out/ (fails the test if there is not exactly one).
  std::filesystem::path job_folder() const;
  // Every line of results.jsonl of the job, parsed.
  std::vector<nlohmann::json> records(const std::string& type = "case") const;

 private:
  std::filesystem::path dir_;
};

std::string read_text(const std::filesystem::path& p);
// A comma-separated file as rows of fields (no quoting: commbench's CSVs quote nothing these
// tests read); a trailing comma gives an empty last field.
std::vector<std::vector<std::string>> csv_rows(const std::filesystem::path& p);
// Whether the plugin libcommbench_backend_<name>.so was built (its dependency may be missing).
bool plugin_built(const char* name);

}  // namespace commbench::testing

// Skips the test unless every named plugin was built.
#define REQUIRE_PLUGINS(...)                  \
  for (const char* p : {__VA_ARGS__})         \
    if (!::commbench::testing::plugin_built(p)) GTEST_SKIP() << p << " plugin not built (dependency missing)";

namespace commbench::testing {

}  // namespace commbench::testing
