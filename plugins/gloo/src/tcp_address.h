// gloo's TCP pair address as the full-mesh connect sends it.
#pragma once

#include <vector>

namespace commbench::gloo_backend {

// gloo's TCP address copies a whole sockaddr_storage, whose bytes past the socket address are
// whatever was on the stack (pointers of the process among them). The same address with those
// bytes zeroed: they neither travel nor defeat the packing (address_table.h), and the peer reads
// only the socket address and the sequence number.
std::vector<char> clean_tcp_address(const std::vector<char>& bytes);

}  // namespace commbench::gloo_backend
