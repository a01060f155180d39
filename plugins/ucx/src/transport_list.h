// Reading a UCX_TLS transport list ("tcp,sm", "^cma,knem", "\\cma:aux") as UCX 1.13 reads it:
// one splitter for the option's check (options.cpp) and the context's choices (backend.cpp).
#pragma once

#include <string_view>
#include <vector>

namespace commbench::ucx_backend {

// The items between commas, empty ones kept (UCX skips them; each caller says what they mean).
// A leading '^' is the caller's to strip.
std::vector<std::string_view> split_ucx_list(std::string_view list);

// Whether the list lets UCX open transport `name`: "all" only as the list's one item, "^" excluding
// what follows, aliases "sm"/"shm" for every shared-memory transport, a strict "\\name" naming only
// a transport (not an alias), "name:aux" naming it too. An empty list is UCX's default: all.
bool tls_allows(std::string_view tls, std::string_view name);

// True for a list that asks for an RDMA (or Cray) transport by name: a user benchmarking a NIC,
// even between ranks of one host, whose devices must not be narrowed to loopback.
bool names_rdma_transport(std::string_view tls);

}  // namespace commbench::ucx_backend
