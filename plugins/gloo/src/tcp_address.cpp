#include "tcp_address.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

#include <gloo/transport/tcp/address.h>

namespace commbench::gloo_backend {

std::vector<char> clean_tcp_address(const std::vector<char>& bytes) {
  const gloo::transport::tcp::Address address(bytes);
  const sockaddr_storage& raw = address.getSockaddr();
  sockaddr_storage clean{};
  size_t length = sizeof(clean);
  if (raw.ss_family == AF_INET) length = sizeof(sockaddr_in);
  if (raw.ss_family == AF_INET6) length = sizeof(sockaddr_in6);
  std::memcpy(&clean, &raw, length);
  return gloo::transport::tcp::Address(clean, address.getSeq()).bytes();
}

}  // namespace commbench::gloo_backend
