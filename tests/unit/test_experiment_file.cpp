// Reading the experiment file: every path that is not a readable file of sane size gives a
// message (never a filesystem_error, never an endless read), and a file broken wholesale prints
// a bounded number of lines (issue 17, item 9 and its minor findings).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "common/diagnostic.h"
#include "experiment/experiment.h"
#include "experiment/experiment_file.h"
#include "test_common.h"

namespace commbench {
namespace {

namespace fs = std::filesystem;

using test::TempDir;

std::string error_of(const std::string& path, size_t max = kMaxExperimentFileBytes) {
  auto r = read_experiment_file(path, max);
  const auto* e = std::get_if<FileReadError>(&r);
  return e ? e->message : std::string("(read ") + std::to_string(std::get<std::string>(r).size()) + " bytes)";
}

TEST(ExperimentFile, SymlinkLoopIsAMessage) {
  TempDir d;
  fs::create_symlink(d.path() / "b.toml", d.path() / "a.toml");
  fs::create_symlink(d.path() / "a.toml", d.path() / "b.toml");
  const std::string e = error_of((d.path() / "a.toml").string());
  EXPECT_NE(e.find("Too many levels of symbolic links"), std::string::npos) << e;
  // Through the parser too: one located diagnostic, no exception.
  const ParseResult r = parse_experiment_file((d.path() / "a.toml").string());
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_FALSE(r.experiment);
  EXPECT_NE(r.diagnostics[0].format().find("a.toml: error: cannot read the experiment file"), std::string::npos)
      << r.diagnostics[0].format();
}

TEST(ExperimentFile, DirectoryDeviceAndMissingFileAreNamed) {
  TempDir d;
  EXPECT_NE(error_of(d.path().string()).find("it is a directory"), std::string::npos);
  EXPECT_NE(error_of("/dev/zero").find("it is a character device"), std::string::npos);
  EXPECT_NE(error_of((d.path() / "none.toml").string()).find("No such file or directory"), std::string::npos);
}

TEST(ExperimentFile, FifoWithoutWriterDoesNotBlock) {
  TempDir d;
  const fs::path fifo = d.path() / "pipe.toml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Opening a FIFO blocks until a writer comes unless opened non-blocking; with no writer the
  // read sees end-of-file at once, and that is said (it read as an experiment without a name).
  const std::string e = error_of(fifo.string());
  EXPECT_NE(e.find("it is a pipe that gave nothing: its writer wrote nothing, or none had it open yet"), std::string::npos) << e;
  const fs::path empty = d.path() / "empty.toml";
  std::ofstream(empty).flush();
  EXPECT_NE(error_of(empty.string()).find("it is empty: an experiment needs at least name"), std::string::npos);
  std::ofstream(d.path() / "blank.toml") << "\n";  // not empty: the parser's own messages
  EXPECT_EQ(error_of((d.path() / "blank.toml").string()), "(read 1 bytes)");
}

TEST(ExperimentFile, SizeIsCapped) {
  TempDir d;
  const fs::path big = d.path() / "big.toml";
  std::ofstream(big) << std::string(2048, '#');
  EXPECT_NE(error_of(big.string(), 1024).find("more than the 1024 bytes"), std::string::npos);
  EXPECT_EQ(error_of(big.string(), 4096), "(read 2048 bytes)");
}

TEST(ExperimentFile, UnreadableFileSaysPermissionDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any file; the CLI test covers this with setpriv";
  TempDir d;
  const fs::path f = d.path() / "secret.toml";
  std::ofstream(f) << "name = \"x\"\n";
  fs::permissions(f, fs::perms::none);
  EXPECT_NE(error_of(f.string()).find("Permission denied"), std::string::npos);
}

TEST(Diagnostics, PrintingStopsAtTheLimitAndCountsTheRest) {
  std::vector<Diagnostic> diags;
  for (int i = 0; i < 120; ++i)
    diags.push_back(Diagnostic{i % 4 == 3 ? Diagnostic::Severity::Warning : Diagnostic::Severity::Error,
                               SourcePos{"f.toml", i + 1, 1}, "unknown key"});
  std::ostringstream out;
  print_diagnostics(out, diags, 50);
  const std::string text = out.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 51);
  EXPECT_NE(text.find("f.toml:50:1: error: unknown key"), std::string::npos);
  EXPECT_EQ(text.find("f.toml:51:1"), std::string::npos);
  // Of the 70 left out (51..120), lines 52, 56, ... are warnings: 18 of them.
  EXPECT_NE(text.find("... and 52 more error(s) and 18 more warning(s) not shown"), std::string::npos) << text;
}

}  // namespace
}  // namespace commbench
