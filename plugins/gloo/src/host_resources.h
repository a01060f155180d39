// Whether this host can hold Gloo's full mesh at the run's size (issue 28 §13). Debian's Gloo
// (the 2022 snapshot) opens one listening socket per peer for every rank while it connects the
// mesh, each on a port from the ephemeral range: a host with L of N ranks needs L × (N − 1)
// ports at once, and every rank about 2 × (N − 1) descriptors. Past either limit the connect
// fails deep inside Gloo ("Address already in use", after a long wait), which looks like a peer
// that exited; checked before connecting instead, and such errors are explained when they come
// anyway.
#pragma once

#include <string>
#include <string_view>

#include "commbench/backend.h"

namespace commbench::gloo_backend {

// Throws PluginError(CB_ERR_RESOURCE_EXHAUSTED) naming the limit, the numbers and what to do
// when the full mesh cannot fit: the ports of net.ipv4.ip_local_port_range, or RLIMIT_NOFILE.
void check_full_mesh_fits(const cb_host_services& host);

// For an error message of Gloo's transport: what it means when it says the host ran out of
// ports or descriptors ("" when it says something else).
std::string resource_exhaustion_hint(std::string_view gloo_message);

}  // namespace commbench::gloo_backend
