#include <filesystem>

#include <gtest/gtest.h>

#include "plugin/search_path.h"
#include "test_plugin_helpers.h"

namespace commbench {
namespace {

using test::TempDir;
namespace fs = std::filesystem;

std::vector<std::string> paths_of(const std::vector<SearchDir>& dirs) { return search_dir_paths(dirs); }

TEST(PluginSearchPath, OrderIsGivenThenEnvThenNextToBinaryThenInstall) {
  SearchPathInputs in;
  in.extra_dirs = {"/x/from-experiment", "/x/from-cli"};
  in.env_plugin_path = "/e/one::/e/two:";  // empty entries are ignored
  in.exe_path = "/opt/cb/bin/commbench";
  in.install_dir = "/usr/local/lib/commbench/plugins";
  auto dirs = build_search_path(in);

  const std::vector<std::string> expected = {
      "/x/from-experiment", "/x/from-cli", "/e/one", "/e/two",
      "/opt/cb/" COMMBENCH_PLUGIN_SUBDIR, "/opt/cb/bin/plugins", "/usr/local/lib/commbench/plugins"};
  EXPECT_EQ(paths_of(dirs), expected);
  EXPECT_EQ(dirs[2].origin, "COMMBENCH_PLUGIN_PATH");
  EXPECT_EQ(dirs[4].origin, "next to the commbench binary");
  EXPECT_EQ(dirs[6].origin, "install directory");
}

TEST(PluginSearchPath, RelativeDirsBecomeAbsoluteAndDuplicatesAreDropped) {
  TempDir tmp;
  std::string real = tmp.mkdir("plugins");
  fs::create_directory_symlink(real, tmp.path() / "alias");
  SearchPathInputs in;
  in.extra_dirs = {real, real + "/", (tmp.path() / "alias").string(), "rel/dir"};
  in.env_plugin_path = real;
  auto dirs = paths_of(build_search_path(in));
  ASSERT_EQ(dirs.size(), 2u) << "the same directory three ways is searched once";
  EXPECT_EQ(dirs[0], real);
  EXPECT_EQ(dirs[1], (fs::current_path() / "rel/dir").string());
}

TEST(PluginSearchPath, EmptyInputsGiveAnEmptyPath) {
  EXPECT_TRUE(build_search_path(SearchPathInputs{}).empty());
}

TEST(PluginSearchPath, DefaultPathReadsTheEnvironmentAndTheRunningBinary) {
  ::setenv("COMMBENCH_PLUGIN_PATH", "/from/env", 1);
  auto dirs = default_search_path({"/given"});
  ::unsetenv("COMMBENCH_PLUGIN_PATH");
  ASSERT_GE(dirs.size(), 4u);
  EXPECT_EQ(dirs[0].path, "/given");
  EXPECT_EQ(dirs[1].path, "/from/env");
  fs::path exe_dir = fs::path(current_executable_path()).parent_path();
  EXPECT_EQ(dirs[3].path, (exe_dir / "plugins").string());
}

TEST(PluginSearchPath, CurrentExecutableIsThisTestBinary) {
  std::string exe = current_executable_path();
  ASSERT_FALSE(exe.empty());
  EXPECT_TRUE(fs::equivalent(exe, "/proc/self/exe"));
}

TEST(PluginFileName, RoundTripsAndRejectsOtherFiles) {
  EXPECT_EQ(plugin_file_name("gloo"), "libcommbench_backend_gloo.so");
  EXPECT_EQ(plugin_name_from_file("libcommbench_backend_gloo.so"), "gloo");
  EXPECT_EQ(plugin_name_from_file("libcommbench_backend_nccl-2_x.so"), "nccl-2_x");
  EXPECT_EQ(plugin_name_from_file("libcommbench_backend_.so"), std::nullopt);
  EXPECT_EQ(plugin_name_from_file("libcommbench_backend_gloo.so.1"), std::nullopt);
  EXPECT_EQ(plugin_name_from_file("libcommbench_backend_a.b.so"), std::nullopt);
  EXPECT_EQ(plugin_name_from_file("libgloo.so"), std::nullopt);
}

TEST(PluginScan, FirstMatchWinsAndLaterOnesAreShadowed) {
  TempDir tmp;
  std::string d1 = tmp.mkdir("first"), d2 = tmp.mkdir("second");
  tmp.write("first/libcommbench_backend_gloo.so");
  tmp.write("second/libcommbench_backend_gloo.so");
  tmp.write("second/libcommbench_backend_ucx.so");
  tmp.write("first/libcommbench_backend_b.so");
  tmp.write("first/libcommbench_backend_a.so");
  // Not plugins: wrong names, a versioned file, a directory with a plugin's name.
  tmp.write("first/libgloo.so");
  tmp.write("first/libcommbench_backend_x.so.2");
  tmp.write("first/README");
  tmp.mkdir("second/libcommbench_backend_dir.so");

  PluginScan scan = scan_plugin_dirs({d1, (tmp.path() / "missing").string(), d2});
  std::vector<std::string> names;
  for (const auto& f : scan.found) names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "gloo", "ucx"}))
      << "search order, then file name order within a directory";
  EXPECT_EQ(scan.found[2].path, d1 + "/libcommbench_backend_gloo.so");
  ASSERT_EQ(scan.shadowed.size(), 1u);
  EXPECT_EQ(scan.shadowed[0].file.path, d2 + "/libcommbench_backend_gloo.so");
  EXPECT_EQ(scan.shadowed[0].shadowed_by, d1 + "/libcommbench_backend_gloo.so");
  // The directory named like a plugin is not loaded, and said so (it was left out silently).
  ASSERT_EQ(scan.not_files.size(), 1u);
  EXPECT_EQ(scan.not_files[0].path, d2 + "/libcommbench_backend_dir.so");
  EXPECT_EQ(scan.not_files[0].why, "a directory");
}

TEST(PluginScan, EntriesNamedLikePluginsThatAreNotFilesAreListedWithWhatTheyAre) {
  TempDir tmp;
  const std::string dir = tmp.mkdir("plugins");
  fs::create_symlink(tmp.path() / "gone.so", tmp.path() / "plugins/libcommbench_backend_dangling.so");
  fs::create_symlink(tmp.path(), tmp.path() / "plugins/libcommbench_backend_linkdir.so");
  fs::create_symlink(tmp.path() / "gone.so", tmp.path() / "plugins/not_a_plugin_name.so");  // not named like one
  tmp.write("plugins/libcommbench_backend_good.so");
  const PluginScan scan = scan_plugin_dirs({dir});
  ASSERT_EQ(scan.found.size(), 1u);
  EXPECT_EQ(scan.found[0].name, "good");
  ASSERT_EQ(scan.not_files.size(), 2u);
  EXPECT_EQ(scan.not_files[0].path, dir + "/libcommbench_backend_dangling.so");
  EXPECT_EQ(scan.not_files[0].why, "a symbolic link to " + (tmp.path() / "gone.so").string() + ", which does not exist");
  EXPECT_EQ(scan.not_files[1].path, dir + "/libcommbench_backend_linkdir.so");
  EXPECT_EQ(scan.not_files[1].why, "a symbolic link to " + tmp.path().string() + ", a directory");
  EXPECT_FALSE(find_plugin({dir}, "dangling")) << "a run cannot load it either";
}

TEST(PluginScan, SymlinkedPluginsCount) {
  TempDir tmp;
  std::string target = tmp.write("store/libcommbench_backend_gloo.so.0.1");
  std::string dir = tmp.mkdir("plugins");
  fs::create_symlink(target, tmp.path() / "plugins/libcommbench_backend_gloo.so");
  PluginScan scan = scan_plugin_dirs({dir});
  ASSERT_EQ(scan.found.size(), 1u);
  EXPECT_EQ(scan.found[0].name, "gloo");
}

TEST(FindPlugin, TakesTheFirstDirectoryHoldingTheName) {
  TempDir tmp;
  std::string d1 = tmp.mkdir("a"), d2 = tmp.mkdir("b");
  tmp.write("b/libcommbench_backend_gloo.so");
  tmp.write("a/libcommbench_backend_ucx.so");
  tmp.write("b/libcommbench_backend_ucx.so");
  EXPECT_EQ(find_plugin({d1, d2}, "gloo")->path, d2 + "/libcommbench_backend_gloo.so");
  EXPECT_EQ(find_plugin({d1, d2}, "ucx")->path, d1 + "/libcommbench_backend_ucx.so");
  EXPECT_EQ(find_plugin({d1, d2}, "nccl"), std::nullopt);
}

TEST(FindPlugin, RejectsNamesThatWouldLeaveTheDirectory) {
  TempDir tmp;
  std::string dir = tmp.mkdir("plugins");
  tmp.mkdir("plugins/libcommbench_backend_");
  tmp.write("libcommbench_backend_y.so");  // reachable as plugins/libcommbench_backend_/../../
  EXPECT_TRUE(fs::exists(dir + "/" + plugin_file_name("/../../libcommbench_backend_y")));
  EXPECT_EQ(find_plugin({dir}, "/../../libcommbench_backend_y"), std::nullopt);
  EXPECT_EQ(find_plugin({dir}, ""), std::nullopt);
}

}  // namespace
}  // namespace commbench
