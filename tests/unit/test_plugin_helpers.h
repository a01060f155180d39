// Helpers shared by the tests of the plugin module (core/src/plugin).
#pragma once

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace commbench::test {

// A fresh directory under TMPDIR, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "commbench-plugin-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

  // Creates `relative` (and its parent directories) with `content`; returns its path.
  std::string write(const std::string& relative, const std::string& content = "",
                    bool executable = false) const {
    std::filesystem::path p = path_ / relative;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << content;
    if (executable) ::chmod(p.c_str(), 0755);
    return p.string();
  }
  std::string mkdir(const std::string& relative) const {
    std::filesystem::create_directories(path_ / relative);
    return (path_ / relative).string();
  }

 private:
  std::filesystem::path path_;
};

// Directory of the test plugins (crash, hang), when tests/CMakeLists.txt passes it in.
inline const char* test_plugin_dir() {
#ifdef COMMBENCH_TEST_PLUGIN_DIR
  return COMMBENCH_TEST_PLUGIN_DIR;
#else
  return nullptr;
#endif
}

// The commbench binary, which answers `commbench __probe PATH`, when tests/CMakeLists.txt passes it.
inline const char* commbench_exe() {
#ifdef COMMBENCH_EXE
  return COMMBENCH_EXE;
#else
  return nullptr;
#endif
}

// EXPECT_TRUE(contains(text, part)) prints both on failure (gmock's HasSubstr without gmock).
inline ::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << part << "' is not in '" << text << "'";
}

#define COMMBENCH_REQUIRE_TEST_PLUGINS()                                                   \
  if (::commbench::test::test_plugin_dir() == nullptr)                                     \
  GTEST_SKIP() << "COMMBENCH_TEST_PLUGIN_DIR is not defined for this build (tests/CMakeLists.txt)"

#define COMMBENCH_REQUIRE_EXE()                                                            \
  if (::commbench::test::commbench_exe() == nullptr)                                       \
  GTEST_SKIP() << "COMMBENCH_EXE is not defined for this build (tests/CMakeLists.txt)"

}  // namespace commbench::test
