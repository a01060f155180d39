// Token check for the store's HELLO.
#pragma once

#include <string_view>

namespace commbench {

// True when `given` equals `expected`. Takes time that depends only on the two lengths, never on
// where the first difference is, so a token cannot be guessed byte by byte from response times.
bool tokens_equal(std::string_view expected, std::string_view given);

}  // namespace commbench
