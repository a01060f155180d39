// The CLI surface: validate, plugins, help, and side-by-side backends.
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "job_harness.h"

namespace commbench::testing {
namespace {

TEST(Cli, ValidateAcceptsEveryShippedConfig) {
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(COMMBENCH_SOURCE_DIR) / "configs")) {
    if (e.path().extension() != ".toml") continue;
    const auto r = run_commbench({"validate", e.path().string()}, COMMBENCH_SOURCE_DIR);
    EXPECT_EQ(r.exit_code, 0) << e.path() << "\n" << r.output;
    EXPECT_NE(r.output.find("valid"), std::string::npos) << r.output;
  }
  // The count is of the records the job writes: seed 003's 31 sizes of all_pairs at 4 ranks
  // are 31 x 12 ordered pairs (it once said 31).
  const auto seed3 = run_commbench({"validate", "configs/seed003_all_pairs.toml"}, COMMBENCH_SOURCE_DIR);
  EXPECT_NE(seed3.output.find("1 execution(s), 372 case record(s)\n"), std::string::npos) << seed3.output;
  const auto seed4 = run_commbench({"validate", "configs/seed004_suite.toml"}, COMMBENCH_SOURCE_DIR);
  EXPECT_NE(seed4.output.find("workload execution(s)"), std::string::npos) << seed4.output;
}

TEST(Cli, ValidateRejectsWithLocationAndExitCode2) {
  JobDir dir;
  const auto file = dir.write("bad.toml", "name = \"x\"\n[[run]]\nbackends = [\"gloo\"]\nops = [\"allreduce\"]\nsizes = [\"4KiB\"]\niteratons = 3\n");
  const auto r = run_commbench({"validate", file.string()}, dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad.toml:6:1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("did you mean 'iterations'"), std::string::npos) << r.output;
  // `run` validates first and runs nothing.
  const auto run = dir.run(file);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "out"));
}

TEST(Cli, ValidateRejectsUnknownBackendAndUnsupportedOp) {
  JobDir dir;
  const auto file = dir.write("bad.toml", fmt::format(R"(name = "x"
plugin_path = ["{}"]
[[run]]
backends = ["gloo", "nosuch"]
ops = ["allreduce"]
sizes = ["4KiB"]
[[run]]
backends = ["crash"]
ops = ["allgather"]
sizes = ["4KiB"]
)", COMMBENCH_TEST_PLUGIN_DIR));
  const auto r = run_commbench({"validate", file.string()}, dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad.toml:4:21"), std::string::npos) << r.output;  // "nosuch"
  EXPECT_NE(r.output.find("nosuch"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bad.toml:9:8"), std::string::npos) << r.output;   // "allgather"
}

TEST(Cli, PluginsListsGlooWithAbiAndCapabilities) {
  const auto r = run_commbench({"plugins"}, COMMBENCH_SOURCE_DIR);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("gloo"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("allreduce"), std::string::npos) << r.output;
  const auto j = run_commbench({"plugins", "--json", "-P", COMMBENCH_TEST_PLUGIN_DIR}, COMMBENCH_SOURCE_DIR);
  ASSERT_EQ(j.exit_code, 0) << j.output;
  EXPECT_NE(j.output.find("\"crash\""), std::string::npos) << j.output;
  EXPECT_NE(j.output.find("\"abi_major\""), std::string::npos) << j.output;
}

TEST(Cli, EveryCommandHasHelp) {
  for (const char* cmd : {"run", "validate", "plugins"}) {
    const auto r = run_commbench({cmd, "--help"}, COMMBENCH_SOURCE_DIR);
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_NE(r.output.find("Usage: commbench"), std::string::npos) << r.output;
  }
  EXPECT_EQ(run_commbench({"frobnicate"}, COMMBENCH_SOURCE_DIR).exit_code, 2);
}

TEST(Cli, WrongResultsMakeTheExitCodeNonZero) {
  // The crash plugin's `corrupt` option flips one element of every result on one rank.
  JobDir dir;
  const auto file = dir.write("wrong.toml", fmt::format(R"(name = "wrong"
plugin_path = ["{}"]
[[run]]
backends = ["crash"]
ops = ["allreduce"]
sizes = ["1KiB"]
world_size = 2
iterations = 2
[run.options.crash]
crash_rank = 1
crash_after = 1000000
corrupt = true
)", COMMBENCH_TEST_PLUGIN_DIR));
  const auto r = dir.run(file);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_GT(cases[0]["wrong"].get<int64_t>(), 0);
}

// --set replaces a key before the file is read: the same checks, errors naming the override.
TEST(Cli, SetOverridesKeysWithTheFilesValidation) {
  JobDir dir;
  const auto file = dir.write("two.toml", R"(name = "two"
[[run]]
name = "a"
backend = "gloo"
op = "allreduce"
sizes = ["4KiB"]
world_size = 2
iterations = 5
[[run]]
name = "b"
backend = "gloo"
op = "allgather"
sizes = ["4KiB"]
world_size = 2
)");
  const auto bad = dir.run(file, {"--set", "run.iterations=0"});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--set run.iterations=0: error: 'iterations' must be at least 1, got 0"),
            std::string::npos) << bad.output;
  const auto typo = dir.run(file, {"--set", "run.iteratons=3"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.output.find("did you mean 'iterations'"), std::string::npos) << typo.output;

  // A singular key in the file is replaced by its plural override; --only keeps run "b".
  const auto ok = dir.run(file, {"--set", "run.iterations=3", "--set", "run.world_sizes=[1, 2]",
                                 "--only", "b", "--quiet"});
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 2u);
  for (const auto& c : cases) {
    EXPECT_EQ(c["run"], "b");
    EXPECT_EQ(c["iterations"], 3);
  }
  EXPECT_EQ(cases[0]["world_size"], 1);
  EXPECT_EQ(cases[1]["world_size"], 2);
  const auto unknown = dir.run(file, {"--only", "c"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.output.find("the file has: a, b"), std::string::npos) << unknown.output;
  // A name set on every run has no line of its own to point at (it once said "line 0").
  const auto same = dir.run(file, {"--set", "run.name=x"});
  EXPECT_EQ(same.exit_code, 2);
  EXPECT_NE(same.output.find("duplicate run name 'x' (also the name of [[run]] number 1)"), std::string::npos)
      << same.output;
  // An empty name once selected nothing, and the job "passed" having measured nothing.
  for (const char* only : {"", ",", "a,"}) {
    const auto empty = dir.run(file, {"--only", only});
    EXPECT_EQ(empty.exit_code, 2) << only << ": " << empty.output;
    EXPECT_NE(empty.output.find("an empty run name"), std::string::npos) << empty.output;
  }
  // --json prints summary.json: written even when `outputs` leaves it out (stdout was empty, exit 0).
  const auto json = run_commbench({"run", file.string(), "--only", "a", "--set", "outputs=[\"csv\"]", "--json",
                                   "-o", (dir.path() / "json").string()}, dir.path());
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_NE(json.output.find("\"exit_code\""), std::string::npos) << json.output;
  // validate takes --set and --only as run does: what it checks is what would run.
  const auto checked = run_commbench({"validate", file.string(), "--set", "run.iterations=0"}, dir.path());
  EXPECT_EQ(checked.exit_code, 2) << checked.output;
  EXPECT_NE(checked.output.find("--set run.iterations=0: error: 'iterations' must be at least 1, got 0"),
            std::string::npos) << checked.output;
  const auto kept = run_commbench({"validate", file.string(), "--set", "run.world_sizes=[1, 2]", "--only", "b"},
                                  dir.path());
  EXPECT_EQ(kept.exit_code, 0) << kept.output;
  EXPECT_NE(kept.output.find("valid — 1 run(s), 2 execution(s), 2 case record(s)"), std::string::npos) << kept.output;
  const auto missing = run_commbench({"validate", file.string(), "--only", "c"}, dir.path());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("commbench validate: --only c: no [[run]] of that name; the file has: a, b"),
            std::string::npos) << missing.output;
}

// Issue 28 §3: a local world the host cannot run is refused before anything starts: at
// `validate`, and by `quick` and `run`, which validate first.
TEST(Cli, ALocalWorldFarBeyondTheCpusIsRefusedBeforeAnythingStarts) {
  JobDir dir;
  const auto file = dir.write("huge.toml", R"(name = "huge"
[[run]]
backend = "gloo"
ops = ["allreduce"]
sizes = ["4KiB"]
world_sizes = [2, 100000]
)");
  const auto r = run_commbench({"validate", file.string()}, dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("huge.toml:6:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("world size 100000"), std::string::npos) << r.output;
  // Just past 8 ranks per CPU: oversubscribe = true would allow it, and the message says so.
  cpu_set_t cpus;
  ASSERT_EQ(sched_getaffinity(0, sizeof cpus, &cpus), 0);
  const int over = 8 * CPU_COUNT(&cpus) + 1;
  const auto crowded = dir.write("crowded.toml", fmt::format(R"(name = "crowded"
[[run]]
backend = "gloo"
ops = ["allreduce"]
sizes = ["4KiB"]
world_sizes = [2, {}]
)", over));
  const auto c = run_commbench({"validate", crowded.string()}, dir.path());
  EXPECT_EQ(c.exit_code, 2) << c.output;
  EXPECT_NE(c.output.find(fmt::format("world size {} starts {} worker processes", over, over)), std::string::npos)
      << c.output;
  EXPECT_NE(c.output.find("oversubscribe = true"), std::string::npos) << c.output;
  // More tasks than any Linux can have (pid_max is at most 2^22): refused with oversubscribe too,
  // for root as well (RLIMIT_NPROC does not bind root; the kernel's limits do).
  const auto impossible = dir.write("impossible.toml", R"(name = "impossible"
[[run]]
backend = "gloo"
ops = ["allreduce"]
sizes = ["4KiB"]
oversubscribe = true
world_sizes = [2000000]
)");
  const auto i = run_commbench({"validate", impossible.string()}, dir.path());
  EXPECT_EQ(i.exit_code, 2) << i.output;
  EXPECT_NE(i.output.find("world size 2000000 needs about 6000000 processes and threads"), std::string::npos)
      << i.output;
  const auto quick = run_commbench({"quick", "allreduce", "--ranks", "100000", "-O", (dir.path() / "out").string()},
                                   dir.path());
  EXPECT_EQ(quick.exit_code, 2) << quick.output;
  EXPECT_NE(quick.output.find("--ranks 100000"), std::string::npos) << quick.output;
  EXPECT_LT(quick.seconds, 30.0);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "out")) << "nothing ran";
}

// Issue 28 §20: binary garbage is reported at its first byte that cannot be TOML.
TEST(Cli, ValidatePointsAtTheFirstByteOfABinaryFile) {
  JobDir dir;
  std::string garbage = "\x01\x02\x7f" "ELF";
  for (int i = 0; i < 4096; ++i) garbage += static_cast<char>((i * 131 + 7) % 256);
  const auto file = dir.write("blob.toml", garbage);
  const auto r = run_commbench({"validate", file.string()}, dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("blob.toml:1:1: error: a control character"), std::string::npos) << r.output;
}

// Issue 28 §14: what an experiment hands to its workers (it can run code: LD_PRELOAD) is said,
// on the console and at the head of every rank's log.
TEST(Cli, TheWorkersEnvironmentSetByTheExperimentIsPrinted) {
  JobDir dir;
  const auto file = dir.write("env.toml", R"(name = "env"
[[run]]
name = "with-env"
backend = "gloo"
ops = ["allreduce"]
sizes = ["4KiB"]
world_size = 2
iterations = 2
env = { COMMBENCH_TEST_MARK = "set-by-the-file", FORGED = "x\n# Exit code 0: fake\u001b[2J" }
)");
  const auto r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("run 'with-env' sets the workers' environment: COMMBENCH_TEST_MARK=set-by-the-file"),
            std::string::npos) << r.output;
  // A value's line break or escape sequence is shown, not obeyed: it could forge a console line
  // or erase this notice (a probe's).
  EXPECT_NE(r.output.find("FORGED=x\\n# Exit code 0: fake\\x1b[2J"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("\n# Exit code 0: fake"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << r.output;
  const std::string log = read_text(dir.job_folder() / "logs" / "exec0-gloo-w2-rank1.log");
  EXPECT_EQ(log.rfind("commbench: the experiment sets COMMBENCH_TEST_MARK=set-by-the-file\n", 0), 0u) << log;
  EXPECT_NE(log.find("commbench: the experiment sets FORGED=x\\n# Exit code 0: fake\\x1b[2J\n"), std::string::npos) << log;
}

// plugin-abi.md §1: a plugin's dependencies are found through its RUNPATH or LD_LIBRARY_PATH,
// which "the run's env table can set for the workers". A probe: validate and run refused the
// plugin first, since the probe before the run did not get that env.
TEST(Cli, APluginDependencyFoundThroughTheRunsEnvLoads) {
  if (std::system("command -v patchelf >/dev/null") != 0) GTEST_SKIP() << "needs patchelf (scripts/install-deps.sh)";
  JobDir dir;
  const auto plugins = dir.path() / "plugins", deps = dir.path() / "deps";
  std::filesystem::create_directories(plugins);
  std::filesystem::create_directories(deps);
  const auto plugin = plugins / "libcommbench_backend_faulty.so";
  std::filesystem::copy_file(fmt::format("{}/libcommbench_backend_faulty.so", COMMBENCH_TEST_PLUGIN_DIR), plugin);
  // A dependency only `deps` holds: any small library under a name nothing else has.
  ASSERT_EQ(std::system(fmt::format("cp -L /usr/lib/x86_64-linux-gnu/libz.so.1 {0}/libcbvendordep.so && "
                                    "patchelf --add-needed libcbvendordep.so {1}", deps.string(), plugin.string()).c_str()),
            0);
  const std::string body = fmt::format(R"(name = "dep"
plugin_path = ["{}"]
[[run]]
backend = "faulty"
ops = ["allreduce"]
sizes = ["4KiB"]
world_size = 2
iterations = 2
)", plugins.string());
  const auto without = dir.write("without.toml", body);
  const auto r0 = run_commbench({"validate", without.string()}, dir.path());
  EXPECT_EQ(r0.exit_code, 2) << r0.output;
  EXPECT_NE(r0.output.find("libcbvendordep.so: cannot open shared object file"), std::string::npos) << r0.output;
  const auto with = dir.write("with.toml", body + fmt::format("env = {{ LD_LIBRARY_PATH = \"{}\" }}\n", deps.string()));
  const auto r1 = run_commbench({"validate", with.string()}, dir.path());
  EXPECT_EQ(r1.exit_code, 0) << r1.output;
  const auto r2 = dir.run(with, {"--quiet"});
  EXPECT_EQ(r2.exit_code, 0) << r2.output;
  ASSERT_EQ(dir.records().size(), 1u) << r2.output;
  EXPECT_EQ(dir.records()[0]["status"], "ok");
}

// A 2-rank Gloo job with trace = true, for merge-trace to read; its folder, empty if it failed.
std::filesystem::path run_traced_job(JobDir& dir) {
  const auto file = dir.write("t.toml", R"(name = "traced"
[[run]]
backend = "gloo"
ops = ["allreduce"]
sizes = ["4KiB"]
world_size = 2
iterations = 5
trace = true
)");
  const auto r = dir.run(file, {"--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.exit_code == 0 ? dir.job_folder() : std::filesystem::path();
}

// A probe: `report`, `compare` and `check` ran `python3 -m commbench`, which puts the current
// folder first on sys.path: a json.py (or a whole commbench/ package) planted wherever the
// command was started from ran as its user. Modules planted there are not imported now.
TEST(Cli, ThePythonToolsDoNotImportFromTheCurrentFolder) {
  JobDir dir;
  const auto job = run_traced_job(dir);
  ASSERT_FALSE(job.empty());
  const auto cwd = dir.path() / "planted";
  std::filesystem::create_directories(cwd / "commbench");
  const auto marker = dir.path() / "imported-from-cwd";
  const std::string payload =
      fmt::format("open({:?}, 'a').write(__name__ + '\\n')\n", marker.string());
  for (const char* module : {"json.py", "csv.py", "argparse.py", "commbench/__init__.py", "commbench/__main__.py"})
    std::ofstream(cwd / module) << payload;
  for (const char* tool : {"check", "compare"}) {
    std::vector<std::string> args{tool, job.string()};
    if (std::string(tool) == "compare") args.push_back(job.string());
    else args.push_back("--allow-none");
    const auto r = run_commbench(args, cwd);
    EXPECT_EQ(r.exit_code, 0) << tool << ": " << r.output;
    EXPECT_FALSE(std::filesystem::exists(marker)) << tool << " imported " << read_text(marker);
  }
  // Nor through a PYTHONPATH entry that is empty or relative: they name the current folder too.
  for (const char* pythonpath : {":", ".", "./", "planted-nowhere:."}) {
    const auto r = run_shell(fmt::format("cd '{}' && PYTHONPATH='{}' '{}' check '{}' --allow-none 2>&1", cwd.string(),
                                         pythonpath, COMMBENCH_BIN, job.string()));
    EXPECT_EQ(r.exit_code, 0) << pythonpath << ": " << r.output;
    EXPECT_FALSE(std::filesystem::exists(marker)) << "PYTHONPATH=" << pythonpath << " imported " << read_text(marker);
  }
}

// Issue 28 §9: merge-trace on damaged rank files: a file cut mid-event keeps its whole events
// and says what was lost (exit 1); one nested a million levels deep is refused, not a crash.
TEST(Cli, MergeTraceSaysWhatItCouldNotReadAndNeverCrashes) {
  JobDir dir;
  const auto job = run_traced_job(dir);
  ASSERT_FALSE(job.empty());
  const auto ok = run_commbench({"merge-trace", job.string()}, dir.path());
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  const auto rank1 = job / "trace" / "exec0-rank1.json";
  std::string text = read_text(rank1);
  const size_t events = std::count(text.begin(), text.end(), '{') ;
  ASSERT_GT(events, 4u);
  std::ofstream(rank1, std::ios::trunc) << text.substr(0, text.rfind("\"dur\""));  // cut mid-event
  const auto cut = run_commbench({"merge-trace", job.string()}, dir.path());
  EXPECT_EQ(cut.exit_code, 1) << cut.output;
  EXPECT_NE(cut.output.find("exec0-rank1.json"), std::string::npos) << cut.output;
  EXPECT_NE(cut.output.find("cut off in the middle of an event"), std::string::npos) << cut.output;
  EXPECT_EQ(cut.output.find(" 0 events"), std::string::npos) << "the whole events were lost: " << cut.output;
  std::ofstream(rank1, std::ios::trunc) << "[" << std::string(1 << 20, '[') << std::string(1 << 20, ']') << "]";
  const auto deep = run_commbench({"merge-trace", job.string()}, dir.path());
  EXPECT_EQ(deep.exit_code, 1) << deep.output;
  EXPECT_NE(deep.output.find("nested deeper than 64 levels"), std::string::npos) << deep.output;
  // A results.jsonl line nested as deep is skipped with its line number, not parsed.
  std::ofstream(job / "results.jsonl", std::ios::app) << std::string(1 << 20, '[') << "\n";
  const auto jsonl = run_commbench({"merge-trace", job.string()}, dir.path());
  EXPECT_NE(jsonl.exit_code, 139) << jsonl.output;
  EXPECT_NE(jsonl.output.find("results.jsonl:"), std::string::npos) << jsonl.output;
}

// A probe: a job killed during its first execution (no execution record yet: it is written when
// the execution ends) had merge-trace ask "was the job run with trace = true?" with trace/ full,
// and one killed during its second dropped that execution's rank files without a word. They are
// merged, on each rank's own clock, said, and the exit code is 1; a missing rank file is said too.
TEST(Cli, MergeTraceReadsTheRankFilesOfAnExecutionAKilledJobNeverRecorded) {
  JobDir dir;
  const auto job = run_traced_job(dir);
  ASSERT_FALSE(job.empty());
  // What a kill during the execution leaves: the case lines, no execution line, no job_end.
  std::string kept;
  std::istringstream jsonl(read_text(job / "results.jsonl"));
  for (std::string line; std::getline(jsonl, line);)
    if (line.find("\"type\":\"execution\"") == std::string::npos && line.find("\"type\":\"job_end\"") == std::string::npos)
      kept += line + "\n";
  std::ofstream(job / "results.jsonl", std::ios::trunc) << kept;
  std::filesystem::remove(job / "trace.json");
  const auto merged = run_commbench({"merge-trace", job.string()}, dir.path());
  EXPECT_EQ(merged.exit_code, 1) << merged.output;
  EXPECT_NE(merged.output.find("exec 0: results.jsonl has no record of it"), std::string::npos) << merged.output;
  EXPECT_NE(merged.output.find("from 2 rank files"), std::string::npos) << merged.output;
  const auto trace = nlohmann::json::parse(read_text(job / "trace.json"));
  std::set<int> pids;
  for (const auto& ev : trace["traceEvents"])
    if (ev.value("cat", "") == "timed") pids.insert(ev["pid"].get<int>());
  EXPECT_EQ(pids, (std::set<int>{0, 1})) << "both ranks' timed events";
  std::filesystem::remove(job / "trace" / "exec0-rank1.json");
  const auto one = run_commbench({"merge-trace", job.string()}, dir.path());
  EXPECT_EQ(one.exit_code, 1) << one.output;
  EXPECT_NE(one.output.find("from 1 rank files"), std::string::npos) << one.output;
}

}  // namespace
}  // namespace commbench::testing
