// Paths that are not experiment files, files that are not experiments, and files this user may
// not read: a clear message and exit 2, never a filesystem_error crash or an endless read
// (issue 17, item 9 and its minor findings).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>

#include <fmt/format.h>

#include "job_harness.h"

namespace commbench::testing {
namespace {

namespace fs = std::filesystem;

void expect_refused(const CommandResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(needle), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("terminate called"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("filesystem_error"), std::string::npos) << r.output;
}

TEST(CliBadPaths, SymlinkLoopIsAnErrorForValidateAndRun) {
  JobDir dir;
  fs::create_symlink(dir.path() / "b.toml", dir.path() / "a.toml");
  fs::create_symlink(dir.path() / "a.toml", dir.path() / "b.toml");
  const std::string file = (dir.path() / "a.toml").string();
  expect_refused(run_commbench({"validate", file}, dir.path()), "Too many levels of symbolic links");
  expect_refused(dir.run(file), "Too many levels of symbolic links");
}

// A plugin folder that is not there was taken silently: a typo then ran the plugin of another
// folder on the search path, or none.
TEST(CliBadPaths, APluginFolderThatIsNotThereIsSaid) {
  JobDir dir;
  const std::string config = std::string(COMMBENCH_SOURCE_DIR) + "/configs/quickstart.toml";
  const auto r = run_commbench({"validate", config, "-P", (dir.path() / "no-such").string()}, dir.path());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: plugin folder '" + (dir.path() / "no-such").string() + "' (-P) is not a directory"),
            std::string::npos)
      << r.output;
  // One written in the file is told at its line and column (a probe: the file name alone).
  const auto file = dir.write("pp.toml", "name = \"pp\"\nplugin_path = [\"nonexistent\"]\n[[run]]\nbackend = \"gloo\"\n"
                                         "ops = [\"allreduce\"]\nsizes = [\"4KiB\"]\n");
  const auto in_file = run_commbench({"validate", file.string()}, dir.path());
  EXPECT_NE(in_file.output.find("pp.toml:2:16: warning: plugin folder '" + (dir.path() / "nonexistent").string() +
                                "' (plugin_path) is not a directory"),
            std::string::npos)
      << in_file.output;
}

// "{hardwar}" (a typo of {hardware}) once named a folder literally.
TEST(CliBadPaths, AnUnknownPlaceholderInTheOutputFolderIsRefused) {
  JobDir dir;
  const std::string config = std::string(COMMBENCH_SOURCE_DIR) + "/configs/quickstart.toml";
  const std::string out = (dir.path() / "{hardwar}").string();
  const auto r = run_commbench({"run", config, "-o", out}, dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("'{hardwar}' is not a placeholder; the one there is {hardware}"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out));
  // --dry-run says so too (it printed the plan, exit 0), and -o '' is no folder (it was "results").
  const auto dry = run_commbench({"run", config, "-o", out, "--dry-run"}, dir.path());
  EXPECT_EQ(dry.exit_code, 2) << dry.output;
  const auto empty = run_commbench({"run", config, "-o", ""}, dir.path());
  EXPECT_EQ(empty.exit_code, 2) << empty.output;
  EXPECT_NE(empty.output.find("-o '': an empty folder name"), std::string::npos) << empty.output;
  EXPECT_FALSE(fs::exists(dir.path() / "results"));
  const auto file = dir.write("o.toml", "name = \"o\"\noutput_dir = \"res/{hw}\"\n[[run]]\nbackend = \"gloo\"\n"
                                         "op = \"allreduce\"\nsizes = [\"4KiB\"]\nworld_size = 1\n");
  const auto v = run_commbench({"validate", file.string()}, dir.path());
  EXPECT_EQ(v.exit_code, 2) << v.output;
  EXPECT_NE(v.output.find("o.toml:2:14: error: 'output_dir' holds '{hw}', which is not a placeholder"), std::string::npos)
      << v.output;
}

// --dry-run printed the plan (exit 0) for an output folder under a regular file; the run then
// stopped at once (exit 2). It says so now, creating nothing.
TEST(CliBadPaths, DryRunRefusesAnOutputFolderThatCannotBeMade) {
  JobDir dir;
  const std::string config = std::string(COMMBENCH_SOURCE_DIR) + "/configs/quickstart.toml";
  const auto afile = dir.write("afile", "not a folder\n");
  const auto dry = run_commbench({"run", config, "-o", (afile / "results").string(), "--dry-run"}, dir.path());
  EXPECT_EQ(dry.exit_code, 2) << dry.output;
  EXPECT_NE(dry.output.find("--dry-run: the output folder " + (afile / "results").string() + " cannot be made (" +
                            afile.string() + " is not a folder)"),
            std::string::npos)
      << dry.output;
  // A folder still to be made under one that takes writes is fine, and is not made.
  const auto ok = run_commbench({"run", config, "-o", (dir.path() / "new" / "deeper").string(), "--dry-run"}, dir.path());
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_FALSE(fs::exists(dir.path() / "new"));
}

TEST(CliBadPaths, DirectoryFifoAndDeviceAreErrors) {
  JobDir dir;
  expect_refused(run_commbench({"validate", dir.path().string()}, dir.path()), "it is a directory");
  expect_refused(dir.run(dir.path()), "it is a directory");
  // /dev/zero used to be read until memory ran out.
  const auto zero = run_commbench({"validate", "/dev/zero"}, dir.path());
  expect_refused(zero, "it is a character device");
  EXPECT_LT(zero.seconds, 10.0);
  // A FIFO nobody writes to: read as empty (no blocking), which is not a valid experiment.
  ASSERT_EQ(::mkfifo((dir.path() / "pipe.toml").c_str(), 0600), 0);
  const auto fifo = run_commbench({"validate", (dir.path() / "pipe.toml").string()}, dir.path());
  EXPECT_EQ(fifo.exit_code, 2) << fifo.output;
  EXPECT_LT(fifo.seconds, 10.0);
}

TEST(CliBadPaths, OversizedFileIsRefusedWithTheLimit) {
  JobDir dir;
  {
    std::ofstream big(dir.path() / "big.toml");
    const std::string comment = "# " + std::string(1022, 'x') + "\n";
    for (int i = 0; i < 17 * 1024; ++i) big << comment;  // 17 MiB
  }
  expect_refused(run_commbench({"validate", (dir.path() / "big.toml").string()}, dir.path()),
                 "more than the 16777216 bytes an experiment file may have");
  // Through a pipe, where the size is only known while reading.
  const auto piped = run_shell(fmt::format("(head -c 20000000 /dev/zero | {} validate /dev/stdin)",
                                           shell_quote(COMMBENCH_BIN)));
  EXPECT_EQ(piped.exit_code, 2) << piped.output;
  EXPECT_NE(piped.output.find("16777216 bytes"), std::string::npos) << piped.output;
  // "-" is standard input; an empty one is said as such.
  const auto dash = run_shell(fmt::format(
      "(printf 'name = \"x\"\\n[[run]]\\nbackend = \"gloo\"\\nops = [\"allreduce\"]\\nsizes = [\"4KiB\"]\\n' | {} validate -)",
      shell_quote(COMMBENCH_BIN)));
  EXPECT_EQ(dash.exit_code, 0) << dash.output;
  EXPECT_NE(dash.output.find("-: valid"), std::string::npos) << dash.output;
  const auto empty = run_shell(fmt::format("({} validate - < /dev/null)", shell_quote(COMMBENCH_BIN)));
  EXPECT_EQ(empty.exit_code, 2) << empty.output;
  // Its messages name "<stdin>" (a probe: they named /dev/stdin, a device).
  const auto bad = run_shell(fmt::format(
      "(printf 'name = \"x\"\\n[[run]]\\nbackend = \"gloo\"\\nops = [\"allreduce\"]\\nsizes = [\"4KiB\"]\\nitreations = 3\\n' | "
      "{} validate -)",
      shell_quote(COMMBENCH_BIN)));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("<stdin>:6:1: error: unknown key 'itreations'"), std::string::npos) << bad.output;
  EXPECT_EQ(bad.output.find("/dev/stdin"), std::string::npos) << bad.output;
  // A run from standard input records the hash of the text it ran: as /dev/stdin it hashed a
  // second, empty read; as "<stdin>" a file of that name could have stood in.
  JobDir run_dir;
  const std::string text = "name = \"piped\"\noutput_dir = \"out\"\noutputs = [\"summary_json\"]\n[[run]]\nbackend = \"gloo\"\n"
                           "ops = [\"allreduce\"]\nsizes = [\"4KiB\"]\nwarmup = 0\niterations = 2\n";
  run_dir.write("exp.toml", text);
  run_dir.write("<stdin>", "not the experiment\n");
  const auto ran = run_shell(fmt::format("cd {} && {} run - --quiet < exp.toml && sha256sum exp.toml && "
                                         "grep -ho '\"experiment_sha256\": *\"[0-9a-f]*\"' out/*/summary.json",
                                         shell_quote(run_dir.path().string()), shell_quote(COMMBENCH_BIN)));
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  const std::string digest = ran.output.substr(0, ran.output.find(' '));
  EXPECT_EQ(digest.size(), 64u) << ran.output;
  EXPECT_NE(ran.output.find("\"experiment_sha256\": \"" + digest + "\""), std::string::npos) << ran.output;
}

TEST(CliBadPaths, ThousandsOfErrorsPrintABoundedList) {
  JobDir dir;
  std::string text = "name = \"x\"\n[[run]]\nbackends = [\"gloo\"]\nops = [\"allreduce\"]\nsizes = [\"4KiB\"]\n";
  for (int i = 0; i < 20000; ++i) text += fmt::format("unknown_key_{} = 1\n", i);
  const auto file = dir.write("many.toml", text);
  const auto r = run_commbench({"validate", file.string()}, dir.path());
  EXPECT_EQ(r.exit_code, 2);
  const auto lines = std::count(r.output.begin(), r.output.end(), '\n');
  EXPECT_LE(lines, 52) << r.output.substr(0, 2000);
  EXPECT_NE(r.output.find("and 19950 more error(s) and 0 more warning(s) not shown"), std::string::npos)
      << r.output.substr(r.output.size() > 2000 ? r.output.size() - 2000 : 0);
}

TEST(CliBadPaths, UnreadableExperimentFileSaysPermissionDenied) {
  if (!root_and_setpriv()) GTEST_SKIP() << "needs root and setpriv (util-linux) to run as another user";
  JobDir dir;
  const auto file = dir.write("secret.toml", "name = \"x\"\n");
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
  expect_refused(run_commbench_as_nobody({"validate", file.string()}, dir.path()), "Permission denied");
}

TEST(CliBadPaths, UnreadablePluginIsNotBlamedOnTheLibraryPath) {
  if (!root_and_setpriv()) GTEST_SKIP() << "needs root and setpriv (util-linux) to run as another user";
  const fs::path original = fs::path(COMMBENCH_TEST_PLUGIN_DIR) / "libcommbench_backend_crash.so";
  if (!fs::exists(original)) GTEST_SKIP() << "test plugins not built";
  JobDir dir;
  fs::create_directories(dir.path() / "plugins");
  const fs::path copy = dir.path() / "plugins" / "libcommbench_backend_locked.so";
  fs::copy_file(original, copy);
  fs::permissions(copy, fs::perms::none);
  const auto r = run_commbench_as_nobody({"plugins", "-P", (dir.path() / "plugins").string()}, dir.path());
  EXPECT_NE(r.output.find(copy.string()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Permission denied"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("LD_LIBRARY_PATH"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace commbench::testing
