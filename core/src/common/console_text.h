// Text from an experiment file that reaches a terminal or a log: names head tables and console
// lines, `env` values and profiler commands are printed so that users see what will run. A
// control character there (a line break, ESC, CSI U+009B) could forge or erase console lines,
// and a bidirectional override could make text read differently from what it is.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace commbench {

// The first character of UTF-8 `text` that must not reach a console as it is: C0 and C1 control
// characters and DEL (tab included), U+2028/U+2029 (line and paragraph separators) and the
// bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069). A byte that is
// not valid UTF-8 counts as one, as its value. nullopt when there is none.
std::optional<char32_t> first_unprintable(std::string_view text);

// `text` with each such character written as an escape: \n, \r, \t, \xNN below U+0100, else
// \u{NNNN}; a backslash stays as it is. What was printable is unchanged.
std::string console_safe(std::string_view text);

// "U+0085" / "0x1b": how an error message names such a character.
std::string describe_code_point(char32_t c);

}  // namespace commbench
