// The result check end to end (issue 12 §5): the "faulty" test plugin with one deliberate bug
// per case; each bug passed the check as it was before this change (noted per test), the check
// must now fail the case: status "failed" (never "ok" with #wrong > 0), the first mismatch in the
// record, exit code 1, and no comparison ratio for it. fault = "none" must pass everything.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include <fmt/format.h>

#include "job_harness.h"

namespace commbench::testing {
namespace {

struct Outcome {
  CommandResult run;
  std::vector<nlohmann::json> cases;
};

// One run of the faulty backend; `body` holds the run's keys (ops, sizes, dtypes, ...).
Outcome run_faulty(const JobDir& dir, const std::string& fault, const std::string& body,
                   const std::string& extra_options = "") {
  const auto file = dir.write("faulty.toml", fmt::format(R"(name = "checks"
plugin_path = ["{}"]
[[run]]
backends = ["faulty"]
warmup = 1
iterations = 3
{}
[run.options.faulty]
fault = "{}"
{}
)", COMMBENCH_TEST_PLUGIN_DIR, body, fault, extra_options));
  Outcome o;
  o.run = dir.run(file);
  o.cases = dir.records();
  return o;
}

// The case failed the check, and says where.
void expect_caught(const Outcome& o, const std::string& what) {
  EXPECT_EQ(o.run.exit_code, 1) << what << "\n" << o.run.output;
  ASSERT_FALSE(o.cases.empty()) << what << "\n" << o.run.output;
  for (const auto& c : o.cases) {
    EXPECT_EQ(c["status"], "failed") << what << ": " << c.dump();
    EXPECT_GT(c["wrong"].get<int64_t>(), 0) << what << ": " << c.dump();
    ASSERT_TRUE(c.contains("first_wrong")) << what << ": " << c.dump();
    const auto& w = c["first_wrong"];
    EXPECT_GE(w["rank"].get<int>(), 0);
    EXPECT_LT(w["rank"].get<int>(), c["world_size"].get<int>());
    EXPECT_TRUE(w.contains("index") && w.contains("expected") && w.contains("got")) << w.dump();
    EXPECT_NE(c["reason"].get<std::string>().find("wrong results"), std::string::npos) << c.dump();
  }
}

TEST(ResultChecks, ACorrectBackendPassesEveryOpDtypeAndRedop) {
  JobDir dir;
  const auto o = run_faulty(dir, "none", R"(ops = ["allreduce", "reduce", "reducescatter", "allgather", "gather", "broadcast", "scatter", "alltoall"]
sizes = ["96B"]
dtypes = ["f32", "f64", "f16", "bf16", "f8e4m3", "f8e5m2", "int8", "uint8", "int32", "uint64"]
redops = ["sum", "prod", "min", "max", "avg"]
placement = ["out_of_place", "in_place"]
world_size = 3
root = 1
)");
  EXPECT_EQ(o.run.exit_code, 0) << o.run.output;
  ASSERT_FALSE(o.cases.empty());
  for (const auto& c : o.cases) {
    EXPECT_EQ(c["status"], "ok") << c.dump();
    EXPECT_EQ(c["wrong"], 0) << c.dump();
    EXPECT_FALSE(c.contains("first_wrong")) << c.dump();
  }
}

TEST(ResultChecks, PremultipliedAvgPassesForEveryFloatType) {
  // NCCL's avg for floats: inputs times 1/n rounded to the dtype, summed with rounding.
  JobDir dir;
  const auto o = run_faulty(dir, "none", R"(ops = ["allreduce", "reducescatter", "reduce"]
sizes = ["256B"]
dtypes = ["f32", "f64", "f16", "bf16", "f8e4m3", "f8e5m2"]
redops = ["avg"]
world_size = 3
)", "avg = \"premultiply\"");
  EXPECT_EQ(o.run.exit_code, 0) << o.run.output;
  for (const auto& c : o.cases) EXPECT_EQ(c["wrong"], 0) << c.dump();
}

// Old check: fp8 e5m2 inputs were all 0 from 5 ranks on (int8 from 64, bf16 from 129), so the
// expected sum was 0 and a backend returning zeros passed with #wrong = 0.
TEST(ResultChecks, ZerosAreCaughtForFp8AtFiveRanks) {
  JobDir dir;
  expect_caught(run_faulty(dir, "zeros", R"(ops = ["allreduce"]
sizes = ["64B"]
dtypes = ["f8e5m2", "f8e4m3"]
world_size = 5
)"), "zeros at 5 ranks");
}

// Old check: exactly one rank gave 2, the others 1, so prod = max = 2.
TEST(ResultChecks, MaxInPlaceOfProdIsCaught) {
  JobDir dir;
  expect_caught(run_faulty(dir, "max_for_prod", R"(ops = ["allreduce", "reduce"]
sizes = ["1KiB"]
redops = ["prod"]
dtypes = ["f32", "int32"]
world_size = 2
)"), "max for prod");
}

// Old check: only the first post was checked, so a backend that stops writing after it passed;
// now the receive buffer is poisoned and checked again after the timed iterations (without the
// poison the buffer would still hold the first post's correct result).
TEST(ResultChecks, ABackendThatStopsWritingIsCaughtAfterTheTimedIterations) {
  JobDir dir;
  const auto o = run_faulty(dir, "stale", R"(ops = ["allreduce"]
sizes = ["1KiB"]
world_size = 2
)", "good_posts = 1");
  expect_caught(o, "stale");
  ASSERT_FALSE(o.cases.empty());
  const auto& w = o.cases[0]["first_wrong"];
  EXPECT_EQ(w["check"], "after_timing") << w.dump();
  EXPECT_TRUE(w["got"].is_null()) << "the poison (NaN) is what it got: " << w.dump();
  // Every element of every rank: nothing was written.
  EXPECT_EQ(o.cases[0]["wrong"].get<int64_t>(), 2 * 256);
}

// A backend whose first op was wrong and which then refused the case (in the warm-up) was
// recorded "unsupported", #wrong 0, exit 0: the refusal erased the mismatches already found.
TEST(ResultChecks, WrongResultsBeforeALateRefusalFailTheCase) {
  JobDir dir;
  const auto o = run_faulty(dir, "zeros", R"(ops = ["allreduce"]
sizes = ["1KiB"]
world_size = 2
)", "refuse_after = 1");
  expect_caught(o, "zeros, then refused");
  ASSERT_EQ(o.cases.size(), 1u);
  EXPECT_EQ(o.cases[0]["first_wrong"]["check"], "first_iteration") << o.cases[0].dump();
  EXPECT_NE(o.cases[0]["reason"].get<std::string>().find("then the backend refused the case"), std::string::npos)
      << o.cases[0].dump();
  // Refused late without a mismatch: unsupported, as before (nothing wrong was seen); the job,
  // having measured nothing, exits 1 and says so.
  JobDir right;
  const auto ok = run_faulty(right, "none", R"(ops = ["allreduce"]
sizes = ["1KiB"]
world_size = 2
)", "refuse_after = 1");
  EXPECT_EQ(ok.run.exit_code, 1) << ok.run.output;
  EXPECT_NE(ok.run.output.find("Exit code 1: nothing was measured; 1 case unsupported by its backend"), std::string::npos)
      << ok.run.output;
  ASSERT_EQ(ok.cases.size(), 1u);
  EXPECT_EQ(ok.cases[0]["status"], "unsupported") << ok.cases[0].dump();
  EXPECT_EQ(ok.cases[0]["wrong"], -1) << ok.cases[0].dump();
}

// Old check: the check after the timed iterations used the first check's inputs again, so a
// backend returning the result it cached for these arguments passed. It now uses new values.
TEST(ResultChecks, AResultCachedFromAnEarlierCallIsCaughtAfterTheTimedIterations) {
  JobDir dir;
  const auto o = run_faulty(dir, "cache", R"(ops = ["allreduce", "allgather", "reducescatter"]
sizes = ["1KiB"]
world_size = 2
placement = ["out_of_place", "in_place"]
)");
  expect_caught(o, "cache");
  ASSERT_EQ(o.cases.size(), 6u);
  for (const auto& c : o.cases) {
    EXPECT_EQ(c["first_wrong"]["check"], "after_timing") << c.dump();
    EXPECT_FALSE(c["first_wrong"]["got"].is_null()) << "a value was written, an old one: " << c.dump();
  }
}

// all_pairs had no guards and sent the same payload to both checks: a receive that wrote past or
// before the message, or replayed what an earlier receive delivered, passed.
TEST(ResultChecks, AllPairsCatchesWritesOutsideTheMessageAndReplayedMessages) {
  for (const auto& [fault, buffer, check] :
       {std::tuple{"overflow", "past_recv_end", "first_iteration"},
        std::tuple{"underflow", "before_recv_start", "first_iteration"},
        std::tuple{"cache", "recv", "after_timing"}}) {
    JobDir dir;
    const auto o = run_faulty(dir, fault, R"(ops = ["all_pairs"]
sizes = ["1KiB", "64KiB"]
world_size = 3
)", "overflow_bytes = 8");
    expect_caught(o, fault);
    ASSERT_EQ(o.cases.size(), 12u) << fault;  // 6 directed pairs x 2 sizes
    for (const auto& c : o.cases) {
      EXPECT_EQ(c["first_wrong"].value("buffer", "recv"), buffer) << fault << ": " << c.dump();
      EXPECT_EQ(c["first_wrong"]["check"], check) << fault << ": " << c.dump();
      EXPECT_EQ(c["first_wrong"]["rank"], c["dst"]) << c.dump();
    }
    if (std::string(fault) == "overflow")
      EXPECT_NE(o.cases[0]["reason"].get<std::string>().find("wrote past the end of its receive buffer, element 0 after it"),
                std::string::npos) << o.cases[0].dump();
  }
  JobDir dir;
  const auto ok = run_faulty(dir, "none", R"(ops = ["all_pairs"]
sizes = ["1KiB", "64KiB"]
world_size = 3
)");
  EXPECT_EQ(ok.run.exit_code, 0) << ok.run.output;
  for (const auto& c : ok.cases) EXPECT_EQ(c["wrong"], 0) << c.dump();
}

// Old check: non-roots of reduce and gather were not looked at.
TEST(ResultChecks, WritesIntoNonRootBuffersOfReduceAndGatherAreCaught) {
  JobDir dir;
  const auto o = run_faulty(dir, "nonroot_write", R"(ops = ["reduce", "gather"]
sizes = ["1KiB"]
world_size = 3
root = 2
)");
  expect_caught(o, "nonroot write");
  for (const auto& c : o.cases) EXPECT_NE(c["first_wrong"]["rank"], 2) << c.dump();
}

// Old check: moved values repeated every 120 elements (f32), so a block rotated by 120 matched.
TEST(ResultChecks, BlocksShiftedByTheOldPeriodAreCaught) {
  JobDir dir;
  expect_caught(run_faulty(dir, "rotate", R"(ops = ["allgather", "broadcast", "alltoall", "gather", "scatter"]
sizes = ["960B"]
world_size = 2
)", "rotate = 120"), "rotate by 120");
}

// The same for point-to-point patterns (send/recv through the store), bystander ranks included.
TEST(ResultChecks, PointToPointPatternsPassWhenCorrectAndFailWhenShifted) {
  const std::string body = R"(ops = ["pingpong", "sendrecv", "unidir_bw", "bidir_bw", "msg_rate"]
sizes = ["960B"]
world_size = 4
window = 4
)";
  JobDir good;
  const auto o = run_faulty(good, "none", body);
  EXPECT_EQ(o.run.exit_code, 0) << o.run.output;
  ASSERT_EQ(o.cases.size(), 5u) << o.run.output;
  for (const auto& c : o.cases) EXPECT_EQ(c["wrong"], 0) << c.dump();
  JobDir bad;
  expect_caught(run_faulty(bad, "rotate", body, "rotate = 120"), "p2p rotated by 120");
}

// all_pairs always zeroed and hashed its bytes; what it lacked was the failed status and the
// first mismatch (issue 16 §2).
TEST(ResultChecks, AllPairsWithWrongBytesIsFailedNamingTheFirstByte) {
  JobDir dir;
  const auto o = run_faulty(dir, "zeros", R"(ops = ["all_pairs"]
sizes = ["64B"]
world_size = 3
)");
  expect_caught(o, "all_pairs zeros");
  EXPECT_EQ(o.cases.size(), 6u);
  for (const auto& c : o.cases) {
    EXPECT_EQ(c["first_wrong"]["rank"], c["dst"]) << c.dump();  // the receiver
    EXPECT_EQ(c["first_wrong"]["got"], 0) << c.dump();
  }
}

// A probe's store backend wrote one f32 past its receive buffer: "#wrong 0" and conformance
// PASS, and with 64 bytes the next case died in glibc, blamed on that case. Guard bytes now
// surround every buffer; also a clobbered send buffer (out of place, read-only by the ABI).
TEST(ResultChecks, WritesOutsideTheBuffersOrIntoTheSendBufferAreCaughtAboveAndBelow8KiB) {
  for (const auto& [fault, options, buffer] :
       {std::tuple{"overflow", "overflow_bytes = 4", "past_recv_end"},
        std::tuple{"overflow", "overflow_bytes = 64", "past_recv_end"},
        std::tuple{"underflow", "overflow_bytes = 4", "before_recv_start"},
        std::tuple{"underflow", "overflow_bytes = 64", "before_recv_start"},
        std::tuple{"clobber_send", "", "send"}}) {
    JobDir dir;
    const auto o = run_faulty(dir, fault, R"(ops = ["allreduce", "allgather", "alltoall"]
sizes = ["96B", "64KiB"]
world_size = 3
placement = "out_of_place"
)", options);
    expect_caught(o, fmt::format("{} {}", fault, options));
    for (const auto& c : o.cases) {
      EXPECT_EQ(c["first_wrong"].value("buffer", "recv"), buffer) << fault << ": " << c.dump();
      if (std::string(buffer) == "past_recv_end") {
        EXPECT_EQ(c["first_wrong"]["index"], 0) << c.dump();  // the first element after the end
        EXPECT_NE(c["reason"].get<std::string>().find("wrote past the end of its receive buffer, element 0 after it"),
                  std::string::npos)
            << c.dump();
      } else if (std::string(buffer) == "before_recv_start") {
        EXPECT_EQ(c["first_wrong"]["index"], 0) << c.dump();  // the element just before the start
        EXPECT_NE(c["reason"].get<std::string>().find("wrote before the start of its receive buffer, element 0 before it"),
                  std::string::npos)
            << c.dump();
      } else {
        EXPECT_NE(c["reason"].get<std::string>().find("of the send buffer, which must not change"), std::string::npos)
            << c.dump();
      }
    }
  }
  // In place, the one buffer is guarded too, at both ends.
  for (const char* fault : {"overflow", "underflow"}) {
    JobDir dir;
    const auto o = run_faulty(dir, fault, R"(ops = ["allreduce"]
sizes = ["4KiB"]
world_size = 2
placement = "in_place"
)");
    expect_caught(o, fmt::format("{} in place", fault));
  }
}

// A probe's plugin wrote before every receive buffer, the p2p patterns' acknowledgements
// included: those had nothing around them, and the worker died in glibc ("double free or
// corruption", SIGABRT) on a case it was blamed for, with no record. They have padding now, and
// the data's check says what happened.
TEST(ResultChecks, AWriteBeforeAnAcknowledgementBufferIsCaughtNotACrash) {
  JobDir dir;
  const auto o = run_faulty(dir, "underflow", R"(ops = ["pingpong", "unidir_bw"]
sizes = ["1KiB", "64KiB"]
world_size = 2
)", "overflow_bytes = 8\noverflow_value = 255");
  EXPECT_EQ(o.run.output.find("SIGABRT"), std::string::npos) << o.run.output;
  ASSERT_EQ(o.cases.size(), 4u) << o.run.output;
  expect_caught(o, "underflow on p2p patterns");
}

// A probe's plugin wrote 0x5A one byte past its receive buffer: the guard's first byte was 0x5A
// in every check, so neither check, nor conformance, saw it. The check after timing writes
// another pattern, different at every byte; there the write shows (and in all_pairs too).
TEST(ResultChecks, AStrayByteEqualToTheFirstGuardPatternIsCaughtByTheSecondCheck) {
  for (const char* ops : {R"(ops = ["allreduce"])", R"(ops = ["all_pairs"])"}) {
    JobDir dir;
    const auto o = run_faulty(dir, "overflow", fmt::format(R"({}
sizes = ["4KiB", "64KiB"]
world_size = 2
)", ops), "overflow_bytes = 1\noverflow_value = 90");
    expect_caught(o, ops);
    for (const auto& c : o.cases) {
      EXPECT_EQ(c["first_wrong"].value("buffer", "recv"), "past_recv_end") << c.dump();
      EXPECT_EQ(c["first_wrong"]["check"], "after_timing") << "the first pattern holds 0x5A there: " << c.dump();
    }
  }
}

// Old check: avg sums were multiples of n, so truncating a float avg, or rounding an integer
// one, gave the right numbers.
TEST(ResultChecks, AvgRoundedTheWrongWayIsCaught) {
  JobDir dir;
  expect_caught(run_faulty(dir, "avg_rounding", R"(ops = ["allreduce"]
sizes = ["1KiB"]
redops = ["avg"]
dtypes = ["f32", "bf16", "int32"]
world_size = 3
)"), "avg rounding");
}

TEST(ResultChecks, AFailedCheckIsNeverComparedAsFaster) {
  // Two backends side by side: the broken one must not get a ratio in the comparison.
  JobDir dir;
  const auto file = dir.write("pair.toml", fmt::format(R"(name = "pair"
plugin_path = ["{}"]
[[run]]
backends = ["gloo", "faulty"]
ops = ["allreduce"]
sizes = ["1KiB"]
redops = ["prod"]
world_size = 2
warmup = 1
iterations = 3
[run.options.faulty]
fault = "max_for_prod"
)", COMMBENCH_TEST_PLUGIN_DIR));
  const auto r = dir.run(file);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 2u) << r.output;
  for (const auto& c : cases) EXPECT_EQ(c["status"], c["backend"] == "gloo" ? "ok" : "failed") << c.dump();
  const std::string summary = read_text(dir.job_folder() / "summary.md");
  const size_t comparison = summary.find("### Comparison");
  ASSERT_NE(comparison, std::string::npos) << summary;
  const std::string table = summary.substr(comparison);
  EXPECT_EQ(table.find("×"), std::string::npos) << "a ratio for a failed case:\n" << table;
  EXPECT_NE(table.find("failed"), std::string::npos) << table;
}

}  // namespace
}  // namespace commbench::testing
