#include "experiment/toml_precheck.h"

#include <vector>

namespace commbench {
namespace {

bool non_ascii(char c) { return static_cast<unsigned char>(c) >= 0x80; }

// TOML++ 3.3 bounds arrays and inline tables at 256 levels (TOML_MAX_NESTED_VALUES) but not the
// parts of a dotted key (`a.b.c = 1`, `[a.b.c]`), and each part is a table level: a 40,000-part
// key overflowed an 8 MiB stack, and so did copying (a `--set` value) 220 inline tables of 256-part
// keys each. The bound here is on the whole depth: dotted parts, inline tables and arrays together.
constexpr int kMaxDepth = 256;

// What may stand between the dots of one dotted key outside quotes: bare-key characters and
// blanks. Anything else (`=`, `,`, a newline) ends it. A float or date-time value holds one dot,
// so values never come near the bound.
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
        if (c == '{' || c == '[') {
          if (c == '[' && open_.empty() && at_line_start()) {
            // A [table] or [[array of tables]] header: a new path from the top.
            dotted_parts_ = 1;
            key_parts_ = 0;
            advance();
            if (i_ < t_.size() && t_[i_] == '[') advance();
            continue;
          }
          // The value sits below its key's parts (none for an array's element).
          open_.push_back((open_.empty() ? 0 : open_.back()) + key_parts_ + 1);
          dotted_parts_ = 1;
          key_parts_ = 0;
          if (depth() > kMaxDepth) return finding(kTooDeep);
        } else if ((c == '}' || c == ']') && !open_.empty()) {
          open_.pop_back();
          dotted_parts_ = 1;
          key_parts_ = 0;
        } else if (c == '.') {
          ++dotted_parts_;
          if (depth() > kMaxDepth) return finding(kTooDeep);
        } else if (!part_of_dotted_key(c)) {
          key_parts_ = c == '=' ? dotted_parts_ : 0;  // `=`: the key just read; `,` or a newline: none
          dotted_parts_ = 1;
        }
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

  static constexpr const char* kTooDeep =
      "nested more than 256 levels deep (the parts of dotted keys, inline tables and arrays "
      "together): TOML++ nests a table per part, and no setting is that deep";
  // The table depth at the dot or bracket being scanned: the levels opened around it, plus the
  // parts of the key being read at this level.
  int depth() const { return (open_.empty() ? 0 : open_.back()) + dotted_parts_; }
  bool at_line_start() const {
    for (size_t k = line_start_; k < i_; ++k)
      if (t_[k] != ' ' && t_[k] != '\t') return false;
    return true;
  }

  std::string_view t_;
  size_t i_ = 0;
  size_t line_start_ = 0;
  int line_ = 1;
  int dotted_parts_ = 1;  // of the dotted key (or value) being scanned; quoted parts do not reset it
  int key_parts_ = 0;     // parts of the key whose `=` was just read: its value's table levels
  std::vector<int> open_;  // per open inline table or array: the depth of its contents
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
