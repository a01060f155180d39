#include "bootstrap/auth.h"

#include <algorithm>

namespace commbench {

bool tokens_equal(std::string_view expected, std::string_view given) {
  const size_t n = std::max(expected.size(), given.size());
  unsigned diff = expected.size() != given.size() ? 1u : 0u;
  // Visit every byte of the longer string and accumulate differences without branching on them.
  for (size_t i = 0; i < n; ++i) {
    const unsigned char a = i < expected.size() ? static_cast<unsigned char>(expected[i]) : 0;
    const unsigned char b = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff |= static_cast<unsigned>(a ^ b);
  }
  return diff == 0;
}

}  // namespace commbench
