#include "experiment/toml_precheck.h"

namespace commbench {
namespace {

bool non_ascii(char c) { return static_cast<unsigned char>(c) >= 0x80; }

// TOML++ 3.3 recurses once per part of a dotted key (`a.b.c = 1`, `[a.b.c]`) with no limit: about
// 40,000 parts overflow an 8 MiB stack. Arrays and inline tables stop at 256 levels
// (TOML_MAX_NESTED_VALUES); dotted keys get the same bound here.
constexpr int kMaxDottedKeyParts = 256;

// What may stand between the dots of one dotted key outside quotes: bare-key characters and
// blanks. Anything else (`=`, `,`, a bracket, a newline) ends it. A float or date-time value
// holds one dot, so values never come near the bound.
bool part_of_dotted_key(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == ' ' || c == '\t' || c == '.';
}

class Scanner {
 public:
  explicit Scanner(std::string_view text) : t_(text) {
    if (t_.substr(0, 3) == "\xEF\xBB\xBF") i_ = line_start_ = 3;  // a UTF-8 byte order mark
  }

  std::optional<PrecheckFinding> run() {
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c == '#') {
        skip_comment();
      } else if (starts_with("\"\"\"")) {
        if (auto f = multiline_basic()) return f;
      } else if (starts_with("'''")) {
        skip_until("'''", 3);
      } else if (c == '"') {
        basic();
      } else if (c == '\'') {
        skip_until("'", 1);
      } else if (non_ascii(c)) {
        return finding("a non-ASCII character outside a string or comment: TOML allows them only "
                       "in \"strings\" and # comments");
      } else {
        if (c == '.' && ++dotted_parts_ > kMaxDottedKeyParts)
          return finding("a dotted key of more than 256 parts: TOML++ nests a table per part, and "
                         "commbench allows as many as for nested arrays (256); no setting is that deep");
        if (!part_of_dotted_key(c)) dotted_parts_ = 1;
        advance();
      }
    }
    return std::nullopt;
  }

 private:
  bool starts_with(std::string_view s) const { return t_.substr(i_, s.size()) == s; }
  void advance() {
    if (t_[i_] == '\n') {
      ++line_;
      line_start_ = i_ + 1;
    }
    ++i_;
  }
  PrecheckFinding finding(const char* message) const {
    return PrecheckFinding{line_, static_cast<int>(i_ - line_start_) + 1, message, i_};
  }
  void skip_comment() {
    while (i_ < t_.size() && t_[i_] != '\n') advance();
  }
  // Past the closing `close` (or to the end, where TOML++ reports the unterminated string).
  void skip_until(std::string_view close, size_t open_length) {
    for (size_t k = 0; k < open_length; ++k) advance();
    while (i_ < t_.size() && !starts_with(close)) advance();
    for (size_t k = 0; k < close.size() && i_ < t_.size(); ++k) advance();
  }
  // "...": backslash escapes; a newline ends it (TOML++ reports the error).
  void basic() {
    advance();
    while (i_ < t_.size() && t_[i_] != '"' && t_[i_] != '\n') {
      if (t_[i_] == '\\' && i_ + 1 < t_.size() && t_[i_ + 1] != '\n') advance();
      advance();
    }
    if (i_ < t_.size() && t_[i_] == '"') advance();
  }
  // """...""": after a line-ending backslash TOML++ skips whitespace, testing each character.
  std::optional<PrecheckFinding> multiline_basic() {
    for (int k = 0; k < 3; ++k) advance();
    while (i_ < t_.size() && !starts_with("\"\"\"")) {
      if (t_[i_] != '\\') {
        advance();
        continue;
      }
      advance();
      size_t j = i_;
      while (j < t_.size() && (t_[j] == ' ' || t_[j] == '\t')) ++j;
      if (j >= t_.size() || (t_[j] != '\n' && t_[j] != '\r')) {
        if (i_ < t_.size()) advance();  // an escape such as \" or \n
        continue;
      }
      while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r'))
        advance();
      if (i_ < t_.size() && non_ascii(t_[i_]))
        return finding("a non-ASCII character right after a line-ending backslash in a \"\"\" string: "
                       "write it as a \\u escape, or put it after an ASCII character");
    }
    while (i_ < t_.size() && t_[i_] == '"') advance();  // """ and up to two quotes of content
    return std::nullopt;
  }

  std::string_view t_;
  size_t i_ = 0;
  size_t line_start_ = 0;
  int line_ = 1;
  int dotted_parts_ = 1;  // of the dotted key (or value) being scanned; quoted parts do not reset it
};

// TOML allows no control character anywhere, in strings and comments included, except tab,
// LF, and CR right before LF. A binary file has one within its first bytes, where it should be
// reported, not where the parser happens to give up later.
bool forbidden_control(std::string_view t, size_t i) {
  const auto c = static_cast<unsigned char>(t[i]);
  if (c == '\t' || c == '\n') return false;
  if (c == '\r') return i + 1 >= t.size() || t[i + 1] != '\n';
  return c < 0x20 || c == 0x7F;
}

std::optional<PrecheckFinding> first_control_character(std::string_view t) {
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (forbidden_control(t, i))
      return PrecheckFinding{line, static_cast<int>(i - line_start) + 1,
                             "a control character (not text: TOML allows none but tab, newline and CR before "
                             "newline, even in strings and comments); is this a text file?",
                             i};
    if (t[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<PrecheckFinding> precheck_toml(std::string_view text) {
  // Both scans are linear; the finding nearer the start is the one to fix first.
  auto control = first_control_character(text);
  auto other = Scanner(control ? text.substr(0, control->offset) : text).run();
  return other ? other : control;
}

}  // namespace commbench
