// The gloo backend's options, from the experiment's [run.options.gloo] table.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "commbench/backend.h"

namespace commbench::gloo_backend {

enum class AllreduceAlgorithm {
  kRing,             // gloo::allreduce (new API), ring
  kBcube,            // gloo::allreduce (new API), bcube
  kRingChunked,      // gloo::AllreduceRingChunked (old-style algorithm object, in-place only)
  kHalvingDoubling,  // gloo::AllreduceHalvingDoubling (old-style algorithm object, in-place only)
};

std::string_view algorithm_name(AllreduceAlgorithm algorithm);

// The old-style algorithm classes are bound to one buffer that they reduce in place.
inline bool is_in_place_only(AllreduceAlgorithm algorithm) {
  return algorithm == AllreduceAlgorithm::kRingChunked ||
         algorithm == AllreduceAlgorithm::kHalvingDoubling;
}

struct GlooOptions {
  std::string transport = "tcp";
  // Address the TCP device binds to. Loopback by default: right for local mode, where all
  // ranks share one host. Multi-host runs set hostname (an address of this host) or iface.
  std::string hostname = "127.0.0.1";
  std::string iface;  // network interface name; when set, gloo binds to its address instead
  AllreduceAlgorithm allreduce_algorithm = AllreduceAlgorithm::kRing;
  std::chrono::milliseconds timeout{300000};  // every gloo op and wait
};

// Parses and validates; throws PluginError(CB_ERR_INVALID_ARGUMENT) naming the bad key or value
// and listing what is accepted.
GlooOptions parse_options(const cb_option* options, size_t count);

}  // namespace commbench::gloo_backend
