// Results that cannot be written (issue 17, items 3 and 4): an unwritable output folder is an
// exit 2 before any worker starts, naming the path and the reason; a disk that fills up mid-run
// stops the job with exit 3, the true count of measured cases, and result files whose every
// line is complete. Read-only and full file systems are real tmpfs mounts (root needed; skipped
// otherwise), the permission case runs as nobody through setpriv.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "job_harness.h"

namespace commbench::testing {
namespace {

namespace fs = std::filesystem;

// A tmpfs mounted at `dir` for the test's lifetime, unmounted by its mount point.
class Tmpfs {
 public:
  Tmpfs(const fs::path& dir, const std::string& options) : dir_(dir) {
    fs::create_directories(dir_);
    const bool ro = options.rfind("ro,", 0) == 0;
    mounted_ = ::mount("tmpfs", dir_.c_str(), "tmpfs", ro ? MS_RDONLY : 0,
                       ro ? options.substr(3).c_str() : options.c_str()) == 0;
  }
  ~Tmpfs() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const fs::path& path() const { return dir_; }

 private:
  fs::path dir_;
  bool mounted_ = false;
};

std::string small_experiment(const std::string& name = "outfault") {
  return fmt::format(R"(name = "{}"
[[run]]
backends = ["gloo"]
ops = ["allreduce"]
sizes = ["4KiB"]
world_size = 2
iterations = 2
warmup = 0
)", name);
}

void expect_clean_refusal(const CommandResult& r, const std::string& path, const std::string& reason) {
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(path), std::string::npos) << "the message must name " << path << ":\n" << r.output;
  EXPECT_NE(r.output.find(reason), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("terminate called"), std::string::npos) << r.output;
  // No worker ran: the console table of an execution never started.
  EXPECT_EQ(r.output.find("[exec 1/"), std::string::npos) << r.output;
}

TEST(OutputFaults, ReadOnlyFileSystemIsRefusedBeforeAnyWorkerStarts) {
  JobDir dir;
  Tmpfs ro(dir.path() / "ro", "ro,size=1m");
  if (!ro.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN)";
  const auto file = dir.write("e.toml", small_experiment());
  const std::string out = (ro.path() / "results").string();
  const auto r = run_commbench({"run", file.string(), "-o", out}, dir.path());
  expect_clean_refusal(r, out, "Read-only file system");
}

TEST(OutputFaults, OutputUnderARegularFileIsRefused) {
  JobDir dir;
  const auto file = dir.write("e.toml", small_experiment());
  const auto blocker = dir.write("blocker", "a file, not a folder\n");
  const std::string out = (blocker / "results").string();
  const auto r = run_commbench({"run", file.string(), "-o", out}, dir.path());
  expect_clean_refusal(r, "blocker", "Not a directory");
  // The same through output_dir in the file.
  const auto file2 = dir.write("e2.toml", "output_dir = \"blocker/sub\"\n" + small_experiment());
  const auto r2 = run_commbench({"run", file2.string()}, dir.path());
  expect_clean_refusal(r2, "blocker/sub", "Not a directory");
}

TEST(OutputFaults, FolderWithoutPermissionIsRefused) {
  if (!root_and_setpriv()) GTEST_SKIP() << "needs root and setpriv (util-linux) to run as another user";
  JobDir dir;
  const auto file = dir.write("e.toml", small_experiment());
  fs::create_directories(dir.path() / "locked");  // root's, 0755: nobody cannot create in it
  fs::permissions(dir.path() / "locked", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                             fs::perms::others_read | fs::perms::others_exec);
  const std::string out = (dir.path() / "locked" / "results").string();
  const auto r = run_commbench_as_nobody({"run", file.string(), "-o", out}, dir.path());
  expect_clean_refusal(r, out, "Permission denied");
}

// A job whose results.jsonl outgrows the room left on a small tmpfs.
std::string long_experiment() {
  return R"(name = "diskfull"
[[run]]
backends = ["gloo"]
ops = ["allreduce"]
sizes = { min = 8, max = "64KiB", factor = 2 }
dtypes = ["f32", "f64", "int32", "int64"]
world_size = 2
warmup = 0
iterations = 150
)";
}

TEST(OutputFaults, DiskFullMidRunKeepsWholeLinesAndTellsTheTrueCount) {
  JobDir dir;
  // 14 sizes x 4 dtypes = 56 cases; a case line holds 150 samples (~3 KB): results.jsonl alone
  // needs ~170 KB. Of the ~700 KB left, the summaries' reservation takes ~630 KB at the start.
  Tmpfs small(dir.path() / "small", "size=1m");
  if (!small.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN)";
  std::ofstream(small.path() / "filler") << std::string(320 * 1024, 'x');
  const auto file = dir.write("e.toml", long_experiment());
  const auto r = run_commbench({"run", file.string(), "-o", (small.path() / "out").string(), "--quiet"}, dir.path());

  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_EQ(r.output.find("terminate called"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("No space left on device"), std::string::npos) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"((\d+) of 56 planned case\(s\) were measured)"))) << r.output;
  const int measured = std::stoi(m[1]);
  EXPECT_GT(measured, 0) << r.output;
  EXPECT_LT(measured, 56) << "the job must stop once results cannot be kept:\n" << r.output;

  std::vector<fs::path> jobs;
  for (const auto& e : fs::directory_iterator(small.path() / "out")) jobs.push_back(e.path());
  ASSERT_EQ(jobs.size(), 1u);
  // Every line parses (the documented json.loads loop), and there is no partial last line.
  const std::string text = read_text(jobs[0] / "results.jsonl");
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n') << "results.jsonl ends in a cut line";
  std::istringstream in(text);
  int cases = 0;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "a line of results.jsonl does not parse: " << line.substr(0, 200);
    cases += j.value("type", "") == "case";
  }
  EXPECT_GT(cases, 0);
  EXPECT_LE(cases, measured);
  EXPECT_NE(r.output.find(fmt::format("results.jsonl holds {} case line(s)", cases)), std::string::npos) << r.output;
  const std::string csv = read_text(jobs[0] / "results.csv");
  ASSERT_FALSE(csv.empty());
  EXPECT_EQ(csv.back(), '\n') << "results.csv ends in a cut row";
  // The space reserved at the start holds the summaries, with every measured case.
  ASSERT_TRUE(fs::exists(jobs[0] / "summary.json")) << r.output;
  const auto s = nlohmann::json::parse(read_text(jobs[0] / "summary.json"), nullptr, false);
  ASSERT_FALSE(s.is_discarded());
  EXPECT_EQ(static_cast<int>(s["results"].size()), measured);
  EXPECT_EQ(s["exit_code"], 3);
  EXPECT_TRUE(fs::exists(jobs[0] / "summary.md"));
  EXPECT_NE(r.output.find("summary.json: written"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(jobs[0] / "summary.json.tmp"));
  EXPECT_FALSE(fs::exists(jobs[0] / "summary.md.tmp"));
}

TEST(OutputFaults, DiskFullWithoutRoomForTheSummarySaysWhatIsMissing) {
  JobDir dir;
  // ~60 KB free: too little to reserve the summaries' space, and results.jsonl fills it.
  Tmpfs small(dir.path() / "small", "size=192k");
  if (!small.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN)";
  std::ofstream(small.path() / "filler") << std::string(128 * 1024, 'x');
  const auto file = dir.write("e.toml", long_experiment());
  const auto r = run_commbench({"run", file.string(), "-o", (small.path() / "out").string(), "--quiet"}, dir.path());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_EQ(r.output.find("terminate called"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("summary.json: NOT written"), std::string::npos) << r.output;
  std::vector<fs::path> jobs;
  for (const auto& e : fs::directory_iterator(small.path() / "out")) jobs.push_back(e.path());
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_FALSE(fs::exists(jobs[0] / "summary.json"));
  EXPECT_FALSE(fs::exists(jobs[0] / "summary.json.tmp"));
  std::istringstream in(read_text(jobs[0] / "results.jsonl"));
  for (std::string line; std::getline(in, line);)
    EXPECT_FALSE(nlohmann::json::parse(line, nullptr, false).is_discarded()) << line.substr(0, 200);
}

// A probe: summary.json's reservation did not fit a 200 KiB disk while summary.md's did;
// summary.json, written first at the end, failed, and summary.md then gave back most of its
// reservation: 144 KiB free and no summary.json. A summary that found no room is now written
// again after the others.
TEST(OutputFaults, ASummaryThatFoundTheDiskFullIsWrittenOnceTheOthersGaveBackTheirSpace) {
  JobDir dir;
  Tmpfs tiny(dir.path() / "tiny", "size=200k");
  if (!tiny.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN)";
  const auto file = dir.write("e.toml", R"(name = "fill"
[[run]]
backend = "gloo"
world_size = 2
ops = ["allreduce", "allgather"]
sizes = { min = "8B", max = "64KiB", factor = 2 }
dtypes = ["f32", "int32", "f64"]
warmup = 0
iterations = 60
)");
  const auto r = run_commbench({"run", file.string(), "-o", (tiny.path() / "out").string(), "--quiet"}, dir.path());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  std::vector<fs::path> jobs;
  for (const auto& e : fs::directory_iterator(tiny.path() / "out")) jobs.push_back(e.path());
  ASSERT_EQ(jobs.size(), 1u);
  ASSERT_TRUE(fs::exists(jobs[0] / "summary.json")) << r.output;
  const auto s = nlohmann::json::parse(read_text(jobs[0] / "summary.json"), nullptr, false);
  ASSERT_FALSE(s.is_discarded());
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"((\d+) of 84 planned case\(s\) were measured)"))) << r.output;
  EXPECT_EQ(static_cast<int>(s["results"].size()), std::stoi(m[1]));
  EXPECT_NE(r.output.find("summary.json: written"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(jobs[0] / "summary.md"));
  EXPECT_FALSE(fs::exists(jobs[0] / "summary.json.tmp"));
}

// Issue 28 §7: on a file system with almost no inodes left the summaries cannot even get their
// temporary files; what the job says about each must match what is on disk ("summary.json:
// written" was printed for a summary that was not there).
TEST(OutputFaults, WhatIsSaidAboutEachSummaryMatchesTheDisk) {
  for (const int inodes : {6, 7}) {
    JobDir dir;
    Tmpfs tiny(dir.path() / "tiny", fmt::format("size=10m,nr_inodes={}", inodes));
    if (!tiny.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN)";
    const auto file = dir.write("e.toml", small_experiment());
    const auto r = run_commbench({"run", file.string(), "-o", (tiny.path() / "out").string(), "--quiet"}, dir.path());
    EXPECT_EQ(r.exit_code, 3) << inodes << " inodes: " << r.output;
    std::vector<fs::path> jobs;
    for (const auto& e : fs::directory_iterator(tiny.path() / "out")) jobs.push_back(e.path());
    ASSERT_EQ(jobs.size(), 1u);
    for (const char* summary : {"summary.json", "summary.md"}) {
      const bool there = fs::exists(jobs[0] / summary);
      const bool said_written = r.output.find(fmt::format("{}: written", summary)) != std::string::npos;
      const bool said_missing = r.output.find(fmt::format("{}: NOT written", summary)) != std::string::npos;
      EXPECT_EQ(said_written, there) << inodes << " inodes, " << summary << ":\n" << r.output;
      EXPECT_EQ(said_missing, !there) << inodes << " inodes, " << summary << ":\n" << r.output;
    }
  }
}

}  // namespace
}  // namespace commbench::testing
