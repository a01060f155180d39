// Helpers shared by the tests of the plugin module (core/src/plugin).
#pragma once

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "test_common.h"

namespace commbench::test {

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

#define COMMBENCH_REQUIRE_TEST_PLUGINS()                                                   \
  if (::commbench::test::test_plugin_dir() == nullptr)                                     \
  GTEST_SKIP() << "COMMBENCH_TEST_PLUGIN_DIR is not defined for this build (tests/CMakeLists.txt)"

#define COMMBENCH_REQUIRE_EXE()                                                            \
  if (::commbench::test::commbench_exe() == nullptr)                                       \
  GTEST_SKIP() << "COMMBENCH_EXE is not defined for this build (tests/CMakeLists.txt)"

}  // namespace commbench::test
