// The scan that keeps input TOML++ 3.3 mishandles (undefined behaviour on non-ASCII characters
// where it tests for whitespace; found by the experiment fuzzer) away from it, without refusing
// non-ASCII text where TOML allows it.
#include <gtest/gtest.h>

#include <string>

#include "experiment/experiment.h"
#include "experiment/toml_precheck.h"

namespace commbench {
namespace {

TEST(TomlPrecheck, NonAsciiInStringsAndCommentsIsFine) {
  EXPECT_FALSE(precheck_toml("# Größe und Überblick\nname = \"prüfung ғ\"\nnote = 'litéral'\n"));
  EXPECT_FALSE(precheck_toml("a = \"\"\"\nmehrzeilig ä\n\"\"\"\nb = '''\nроза\n'''\n"));
  EXPECT_FALSE(precheck_toml("\"schlüssel\" = 1\nx = \"esc \\\" ä\"\n"));
  EXPECT_FALSE(precheck_toml("\xEF\xBB\xBFname = \"bom\"\n"));  // a UTF-8 byte order mark
  EXPECT_FALSE(precheck_toml("s = \"\"\"\\\n  ascii first ä\"\"\"\n"));
}

TEST(TomlPrecheck, NonAsciiOutsideStringsIsReportedWhereItIs) {
  auto f = precheck_toml("name = \"x\"\n[run.optionl\xd2\x93o]\n");  // the fuzzer's input, reduced
  ASSERT_TRUE(f);
  EXPECT_EQ(f->line, 2);
  EXPECT_EQ(f->column, 13);
  f = precheck_toml("\xcc\xaa");  // tomlplusplus issue #295
  ASSERT_TRUE(f);
  EXPECT_EQ(f->line, 1);
  EXPECT_EQ(f->column, 1);
  EXPECT_TRUE(precheck_toml("a = 1\xc2\xa7\n"));
}

TEST(TomlPrecheck, NonAsciiAfterALineEndingBackslashIsReported) {
  // tomlplusplus issue #190: s = """\<newline>§"""
  const auto f = precheck_toml("s = \"\"\"\\\n\xc2\xa7\"\"\"\n");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->line, 2);
  EXPECT_EQ(f->column, 1);
}

std::string dotted_key(int parts, const std::string& part = "a") {
  std::string k = part;
  for (int i = 1; i < parts; ++i) k += "." + part;
  return k;
}

TEST(TomlPrecheck, DottedKeysDeeperThanArraysMayNestAreReported) {
  // TOML++ recursed once per part: 40,000 parts overflowed the stack (SIGSEGV) in validate.
  EXPECT_FALSE(precheck_toml("name = \"x\"\n" + dotted_key(256) + " = 1\n"));
  EXPECT_TRUE(precheck_toml("name = \"x\"\n" + dotted_key(257) + " = 1\n"));
  auto f = precheck_toml("name = \"x\"\n" + dotted_key(50000) + " = 1\n");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->line, 2);
  EXPECT_EQ(f->column, 2 * 256);  // the dot before the 257th part
  EXPECT_NE(std::string(f->message).find("nested more than 256 levels"), std::string::npos);
  EXPECT_TRUE(precheck_toml("[" + dotted_key(300) + "]\n"));
  EXPECT_TRUE(precheck_toml("x = { " + dotted_key(300, "b") + " = 1 }\n"));
  EXPECT_TRUE(precheck_toml(dotted_key(300, "\"q.q\"") + " = 1\n"));  // quoted parts count too
  EXPECT_TRUE(precheck_toml(dotted_key(300, " a ") + " = 1\n"));       // blanks around the dots
}

TEST(TomlPrecheck, DepthCountsKeysInlineTablesAndArraysTogether) {
  // 220 inline tables, each under a 256-part key: every key within the bound, the whole 56,000
  // levels deep (a --set value of this shape crashed copying the table).
  const std::string key = dotted_key(200);
  std::string nested = "x = ";
  for (int i = 0; i < 220; ++i) nested += "{ " + key + " = ";
  nested += "1";
  for (int i = 0; i < 220; ++i) nested += " }";
  const auto f = precheck_toml(nested + "\n");
  ASSERT_TRUE(f);
  EXPECT_NE(std::string(f->message).find("nested more than 256 levels"), std::string::npos);
  // Arrays count as levels too; headers start from the top, so deep ones one after another pass.
  EXPECT_TRUE(precheck_toml("x = " + std::string(300, '[') + std::string(300, ']') + "\n"));
  std::string headers;
  for (int i = 0; i < 100; ++i) headers += "[" + dotted_key(200) + "]\nk = 1\n[[run]]\nname = \"r\"\n";
  EXPECT_FALSE(precheck_toml(headers));
  // What real experiment files nest: a few levels.
  EXPECT_FALSE(precheck_toml("[[run]]\noptions.ucx = { tls = [\"shm\", \"self\"] }\n"
                             "model = { layers = [{ name = \"a\", parameters = 1, flops = 2.5e6 }] }\n"
                             "x = [[1, 2], [3.5, 4.25]]\n"));
}

TEST(TomlPrecheck, ManyFloatsOrKeysOnALineAreNotADottedKey) {
  std::string floats = "w = [";
  for (int i = 0; i < 1000; ++i) floats += "1.5, ";
  EXPECT_FALSE(precheck_toml(floats + "2.5]\n"));
  std::string keys = "t = { ";
  for (int i = 0; i < 1000; ++i) keys += "a" + std::to_string(i) + ".b = 1.25, ";
  EXPECT_FALSE(precheck_toml(keys + "z = 1979-05-27T07:32:00.999 }\n"));
  std::string lines;
  for (int i = 0; i < 1000; ++i) lines += "a.b.c = 1.5\n";
  EXPECT_FALSE(precheck_toml(lines));
}

TEST(TomlPrecheck, TheParserReportsItAsALocatedError) {
  const ParseResult r = parse_experiment_string("name = \"x\"\nkey\xc2\xa7 = 1\n", "f.toml");
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_FALSE(r.experiment);
  EXPECT_EQ(r.diagnostics[0].format().rfind("f.toml:2:4: error: a non-ASCII character outside a string", 0), 0u)
      << r.diagnostics[0].format();
}

TEST(TomlPrecheck, SetOverridesAreCheckedLikeTheFile) {
  // `--set KEY=VALUE` reaches TOML++ too: a deep key or a deep inline table in the value crashed.
  const std::string deep = dotted_key(50000);
  for (const std::string& set : {deep + "=1", "run.x={" + deep + "=1}"}) {
    const ParseResult r =
        parse_experiment_string("name = \"x\"\n[[run]]\nbackend = \"gloo\"\nops = [\"allreduce\"]\nsizes = [8]\n", "f.toml", {set});
    ASSERT_EQ(r.diagnostics.size(), 1u) << set.substr(0, 40);
    EXPECT_FALSE(r.experiment);
    EXPECT_NE(r.diagnostics[0].message.find("more than 256"), std::string::npos) << r.diagnostics[0].format();
  }
  // A bare word stays a string, non-ASCII or not (the precheck must not refuse it).
  const ParseResult word = parse_experiment_string(
      "name = \"x\"\n[[run]]\nbackend = \"gloo\"\nops = [\"allreduce\"]\nsizes = [8]\n", "f.toml",
      {"name=café", "output_dir=/home/josé/r"});
  ASSERT_TRUE(word.experiment) << (word.diagnostics.empty() ? "" : word.diagnostics[0].format());
  EXPECT_EQ(word.experiment->name, "café");
  EXPECT_EQ(word.experiment->output_dir, "/home/josé/r");
}

// Issue 28 §20: a binary file is reported at its first byte that cannot be TOML, not where the
// parser happens to give up further on.
TEST(TomlPrecheck, TheFirstControlCharacterIsReportedWhereItIs) {
  auto f = precheck_toml("\x01\x7f" "ELF garbage\n\xff\xfe more");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->line, 1);
  EXPECT_EQ(f->column, 1);
  f = precheck_toml("name = \"x\"\n# a comment with a bell \x07 in it\n");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->line, 2);
  EXPECT_EQ(f->column, 25);
  f = precheck_toml("name = \"in a \x1b[31m string\"\n");
  ASSERT_TRUE(f) << "control characters are not allowed in strings either";
  EXPECT_EQ(f->column, 14);
  // A non-ASCII byte before the control character is the first finding.
  f = precheck_toml("a\xc2\xa7 = 1\n\x02");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->line, 1);
  EXPECT_EQ(f->column, 2);
  // Tab, LF and CRLF are text; a CR alone is not.
  EXPECT_FALSE(precheck_toml("a = 1\t# tab\r\nb = 2\n"));
  EXPECT_TRUE(precheck_toml("a = 1\rb = 2\n"));
}

TEST(TomlPrecheck, BinaryGarbageIsReportedAtItsFirstByte) {
  std::string garbage = "\x01";
  for (int i = 0; i < 300; ++i) garbage += static_cast<char>((i * 37 + 11) % 256);
  const ParseResult r = parse_experiment_string(garbage, "blob.toml");
  ASSERT_FALSE(r.diagnostics.empty());
  EXPECT_EQ(r.diagnostics[0].format().rfind("blob.toml:1:1: error: a control character", 0), 0u)
      << r.diagnostics[0].format();
}

}  // namespace
}  // namespace commbench
