// SHA-256 (FIPS 180-4) of a byte string, as lowercase hex: the experiment file's hash in the
// metadata, comparable with `sha256sum`.
#pragma once

#include <string>
#include <string_view>

namespace commbench {

std::string sha256_hex(std::string_view data);

}  // namespace commbench
