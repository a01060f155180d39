// Text from an experiment file that reaches the console (common/console_text.h): a probe named
// an experiment "x\u0085y\u009b31m" (NEL, CSI) and set env = { A = "x\n# Exit code 0: fake\e[2J" };
// both were accepted and printed raw, forging a console line and clearing the screen.
#include <gtest/gtest.h>

#include "common/console_text.h"
#include "experiment/experiment.h"

namespace commbench {
namespace {

TEST(ConsoleText, ControlLineBreakAndBidiCharactersAreFound) {
  EXPECT_FALSE(first_unprintable("plain ascii, é, 日本, emoji 🙂"));
  EXPECT_EQ(first_unprintable("a\x1b[2J"), char32_t{0x1b});
  EXPECT_EQ(first_unprintable("x\u0085y"), char32_t{0x85});   // NEL, a C1 control
  EXPECT_EQ(first_unprintable("x\u009b31m"), char32_t{0x9b});  // CSI
  EXPECT_EQ(first_unprintable("a\u2028b"), char32_t{0x2028});  // line separator
  EXPECT_EQ(first_unprintable("a\u202eb"), char32_t{0x202e});  // right-to-left override
  EXPECT_EQ(first_unprintable("a\u2067b"), char32_t{0x2067});  // right-to-left isolate
  EXPECT_EQ(first_unprintable("tab\there"), char32_t{'\t'});
  EXPECT_EQ(first_unprintable("bad \xff byte"), char32_t{0xff});
  EXPECT_EQ(describe_code_point(0x1b), "0x1b");
  EXPECT_EQ(describe_code_point(0x85), "U+0085");
}

TEST(ConsoleText, EscapedTextKeepsWhatWasPrintable) {
  EXPECT_EQ(console_safe("LD_PRELOAD=/opt/é/lib.so"), "LD_PRELOAD=/opt/é/lib.so");
  EXPECT_EQ(console_safe("x\n# Exit code 0: fake\x1b[2J"), "x\\n# Exit code 0: fake\\x1b[2J");
  EXPECT_EQ(console_safe("a\r\tb\u0085c\u202ed"), "a\\r\\tb\\x85c\\u{202e}d");
  EXPECT_EQ(console_safe("cut \xe2\x80"), "cut \\xe2\\x80");  // a sequence cut short
}

TEST(ConsoleText, NamesWithC1ControlsOrBidiOverridesAreRefused) {
  for (const char* name : {"x\\u0085y", "x\\u009b31m", "a\\u2028b", "a\\u202eb"}) {
    const ParseResult r = parse_experiment_string(std::string("name = \"") + name + "\"\n[[run]]\nbackends = [\"gloo\"]\n"
                                                  "ops = [\"allreduce\"]\nsizes = [\"4KiB\"]\n", "t.toml");
    EXPECT_FALSE(r.experiment) << name;
    ASSERT_FALSE(r.diagnostics.empty()) << name;
    const std::string text = r.diagnostics[0].format();
    EXPECT_NE(text.find("t.toml:1:8: error: 'name' holds a control character (U+"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace commbench
