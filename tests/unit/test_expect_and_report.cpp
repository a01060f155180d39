// `expect` and `report` in experiment files (issue 14 §1, §3), and where `commbench report`
// looks for its Python package and interpreter.
#include <gtest/gtest.h>

#include "cli/python_tools.h"
#include "experiment/expect_field.h"
#include "experiment/experiment.h"

namespace commbench {
namespace {

constexpr const char* kRun = R"(name = "t"
[[run]]
backend = "gloo"
world_size = 2
ops = ["allreduce", "broadcast"]
sizes = ["4KiB", "1MiB"]
)";

ParseResult parse(const std::string& extra_top, const std::string& run_line) {
  return parse_experiment_string(extra_top + kRun + run_line + "\n", "inline.toml");
}

std::string errors(const ParseResult& r) {
  std::string out;
  for (const auto& d : r.diagnostics)
    if (d.severity == Diagnostic::Severity::Error) out += d.format() + "\n";
  return out;
}

TEST(Expect, TableAndListAreNormalised) {
  const ParseResult r = parse("report = true\n",
                              R"(expect = [{ op = "allreduce", min_size = "1MiB", busbw_gbps = ">=180" },
                                           { max_size = 8192, time_us_p50 = "< 2.5e1" }])");
  ASSERT_TRUE(r.experiment) << errors(r);
  const Experiment& e = *r.experiment;
  EXPECT_TRUE(e.report);
  ASSERT_EQ(e.runs[0].expect.size(), 2u);
  EXPECT_EQ(e.runs[0].expect[0].ops, std::vector<OpKind>{OpKind::Allreduce});
  EXPECT_EQ(e.runs[0].expect[0].min_bytes, 1048576u);
  EXPECT_EQ(e.runs[0].expect[1].max_bytes, 8192u);
  const auto& j = e.as_parsed.at("runs").at(0).at("expect");
  // The workers' copy of the execution carries them too (the settings table round-trips them).
  RunSettings back;
  settings_from_json(e.as_parsed.at("runs").at(0), back);
  ASSERT_EQ(back.expect.size(), 2u);
  EXPECT_EQ(back.expect[0].conditions, e.runs[0].expect[0].conditions);
  EXPECT_EQ(back.expect[1].max_bytes, 8192u);
  EXPECT_EQ(j.at(0).at("busbw_gbps"), ">= 180");
  EXPECT_EQ(j.at(0).at("ops").at(0), "allreduce");
  EXPECT_FALSE(j.at(1).contains("ops"));
  EXPECT_EQ(j.at(1).at("time_us_p50"), "< 2.5e1");
  EXPECT_EQ(e.as_parsed.at("report"), true);
}

TEST(Expect, AbsentMeansNoneAndReportOff) {
  const ParseResult r = parse("", "");
  ASSERT_TRUE(r.experiment) << errors(r);
  EXPECT_TRUE(r.experiment->runs[0].expect.empty());
  EXPECT_EQ(r.experiment->as_parsed.at("runs").at(0).at("expect"), nlohmann::json::array());
  EXPECT_EQ(r.experiment->as_parsed.at("report"), false);
}

TEST(Expect, InheritedFromDefaults) {
  const ParseResult r = parse_experiment_string(
      std::string("name = \"t\"\n[defaults]\nexpect = { busbw_gbps = \">= 1\" }\n") +
          std::string(kRun).substr(std::string("name = \"t\"\n").size()),
      "inline.toml");
  ASSERT_TRUE(r.experiment) << errors(r);
  EXPECT_EQ(r.experiment->runs[0].expect.size(), 1u);
}

TEST(Expect, BadInputIsLocatedAndSaysWhatToWrite) {
  struct Case {
    const char* line;
    const char* message;
  } cases[] = {
      {R"(expect = { busbw_gbps = "fast" })", "is not a condition"},
      {R"(expect = { busbw = ">= 1" })", "did you mean 'busbw_gbps'"},
      {R"(expect = { op = "allreduse", busbw_gbps = ">= 1" })", "did you mean 'allreduce'"},
      {R"(expect = { op = "allreduce" })", "names no metric"},
      {R"(expect = { min_size = "2MiB", max_size = "1MiB", time_us = "< 1" })", "min_size is larger"},
      {R"(expect = { min_size = "1M elements", time_us = "< 1" })", "in bytes"},
      {R"(expect = ">= 180")", "expected a table"},
      {R"(expect = { busbw_gbps = 180 })", "expected a string"},
      // A probe: these were merged silently, as a run refuses them; 1e400 read as infinity.
      {R"(expect = { op = "allreduce", ops = ["broadcast"], busbw_gbps = ">= 1" })", "both 'op' and 'ops' are given"},
      {R"(expect = { ops = ["allreduce", "allreduce"], busbw_gbps = ">= 1" })", "'allreduce' is listed twice in 'ops'"},
      {R"(expect = { busbw_gbps = ">= 1e400" })", "1e400 is beyond the range of a double"},
      {R"(expect = { ops = [], busbw_gbps = ">= 1" })", "'ops' is empty"},
      {R"(expect = { op = ["allreduce"], busbw_gbps = ">= 1" })", "use 'ops' for a list"},
      {R"(expect = { ops = "allreduce", busbw_gbps = ">= 1" })", "use 'op' for a single value"},
  };
  for (const auto& c : cases) {
    const ParseResult r = parse("", c.line);
    EXPECT_FALSE(r.experiment) << c.line;
    const std::string e = errors(r);
    EXPECT_NE(e.find("inline.toml:7:"), std::string::npos) << c.line << "\n" << e;
    EXPECT_NE(e.find(c.message), std::string::npos) << c.line << "\n" << e;
  }
  const ParseResult r = parse("report = 1\n", "");
  EXPECT_NE(errors(r).find("expected a boolean"), std::string::npos) << errors(r);
}

TEST(PythonTools, PackageNextToTheBinaryThenInstallDir) {
  PythonToolInputs in;
  in.exe_path = "/opt/cb/bin/commbench";
  in.install_dir = "/usr/share/commbench/python";
  EXPECT_EQ(python_package_dirs(in),
            (std::vector<std::string>{"/opt/cb/share/commbench/python", "/usr/share/commbench/python"}));
  in.env_python_dir = "/src/python";
  EXPECT_EQ(python_package_dirs(in).front(), "/src/python");
}

TEST(PythonTools, InterpreterFromEnvironmentFirst) {
  PythonToolInputs in;
  in.env_python = "/venv/bin/python";
  EXPECT_EQ(python_interpreter(in), "/venv/bin/python");
  in.env_python.clear();
  EXPECT_FALSE(python_interpreter(in).empty());
}

}  // namespace
}  // namespace commbench
