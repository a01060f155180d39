// The gloo backend's options, from the experiment's [run.options.gloo] table.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "commbench/backend.h"
#include "commbench/sdk/option_table.hpp"

namespace commbench::gloo_backend {

enum class AllreduceAlgorithm {
  kRing,             // gloo::allreduce (new API), ring
  kBcube,            // gloo::allreduce (new API), bcube
  kRingChunked,      // gloo::AllreduceRingChunked (old-style algorithm object, in-place only)
  kHalvingDoubling,  // gloo::AllreduceHalvingDoubling (old-style algorithm object, in-place only)
};

// Indexed by AllreduceAlgorithm: the option's choices and the names the plugin reports.
inline constexpr const char* kAllreduceAlgorithmNames[] = {"ring", "bcube", "ring_chunked", "halving_doubling",
                                                           nullptr};
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

inline constexpr const char* kTransports[] = {"tcp", nullptr};  // the only one this plugin builds

// Every option, defined once: parse_options reads by it, the entry table exports it (ABI 1.2).
inline constexpr sdk::OptionDef<GlooOptions> kOptionTable[] = {
    {"transport", CB_OPTION_CHOICE, "tcp", "gloo transport (only tcp is built)",
     [](GlooOptions& o, const sdk::OptionValue& v) { o.transport = v.text; }, kTransports},
    {"iface", CB_OPTION_STRING, "", "network interface to bind (\"eth0\"); not with hostname",
     [](GlooOptions& o, const sdk::OptionValue& v) {
       if (v.text.empty()) sdk::bad_option_value(v.key, v.text, "a network interface name such as \"lo\" or \"eth0\"");
       o.iface = v.text;
     }},
    {"hostname", CB_OPTION_STRING, "127.0.0.1", "address of this host to bind; multi-host runs set it or iface",
     [](GlooOptions& o, const sdk::OptionValue& v) {
       if (v.text.empty()) sdk::bad_option_value(v.key, v.text, "a host name or IP address of this host");
       o.hostname = v.text;
     }},
    {"allreduce_algorithm", CB_OPTION_CHOICE, "ring",
     "ring/bcube: gloo::allreduce; ring_chunked/halving_doubling: old algorithm classes (in place only)",
     [](GlooOptions& o, const sdk::OptionValue& v) { o.allreduce_algorithm = static_cast<AllreduceAlgorithm>(v.choice); },
     kAllreduceAlgorithmNames},
    {.name = "timeout_ms", .type = CB_OPTION_INT, .default_value = "300000", .doc = "limit of every gloo op and wait",
     .apply = [](GlooOptions& o, const sdk::OptionValue& v) { o.timeout = std::chrono::milliseconds(v.integer); },
     .min = 1, .max = INT32_MAX},
};

// Parses and validates; throws PluginError(CB_ERR_INVALID_ARGUMENT) naming the bad key or value
// and listing what is accepted.
GlooOptions parse_options(const cb_option* options, size_t count);

}  // namespace commbench::gloo_backend
