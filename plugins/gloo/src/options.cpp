#include "options.h"

#include <array>

#include "commbench/sdk/plugin_options.hpp"
#include "errors.h"

namespace commbench::gloo_backend {
namespace {

using sdk::bad_option_value;

constexpr std::array<AllreduceAlgorithm, 4> kAlgorithms = {
    AllreduceAlgorithm::kRing, AllreduceAlgorithm::kBcube, AllreduceAlgorithm::kRingChunked,
    AllreduceAlgorithm::kHalvingDoubling};

AllreduceAlgorithm parse_algorithm(std::string_view value) {
  for (AllreduceAlgorithm a : kAlgorithms)
    if (algorithm_name(a) == value) return a;
  bad_option_value("allreduce_algorithm", value,
                   "one of ring, bcube, ring_chunked, halving_doubling");
}

}  // namespace

std::string_view algorithm_name(AllreduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllreduceAlgorithm::kRing: return "ring";
    case AllreduceAlgorithm::kBcube: return "bcube";
    case AllreduceAlgorithm::kRingChunked: return "ring_chunked";
    case AllreduceAlgorithm::kHalvingDoubling: return "halving_doubling";
  }
  return "?";
}

GlooOptions parse_options(const cb_option* options, size_t count) {
  GlooOptions parsed;
  bool hostname_given = false;
  sdk::for_each_option(options, count, [&](std::string_view key, std::string_view value) {
    if (key == "transport") {
      if (value != "tcp")
        bad_option_value(key, value, "\"tcp\" (the only transport this plugin builds)");
      parsed.transport = value;
    } else if (key == "iface") {
      if (value.empty())
        bad_option_value(key, value, "a network interface name such as \"lo\" or \"eth0\"");
      parsed.iface = value;
    } else if (key == "hostname") {
      if (value.empty()) bad_option_value(key, value, "a host name or IP address of this host");
      parsed.hostname = value;
      hostname_given = true;
    } else if (key == "allreduce_algorithm") {
      parsed.allreduce_algorithm = parse_algorithm(value);
    } else if (key == "timeout_ms") {
      parsed.timeout = std::chrono::milliseconds(sdk::parse_integer_option(
          key, value, 1, INT32_MAX, "a positive number of milliseconds, e.g. \"60000\""));
    } else {
      sdk::unknown_option("gloo", key,
                          {"transport", "iface", "hostname", "allreduce_algorithm", "timeout_ms"});
    }
  });
  // gloo uses the interface's address whenever an interface is named, so a hostname next to
  // it would be silently ignored: refuse the ambiguity instead.
  if (hostname_given && !parsed.iface.empty())
    fail(CB_ERR_INVALID_ARGUMENT,
         "options hostname and iface both given; set only one (iface binds to that interface's "
         "address, hostname to the given address)");
  if (!parsed.iface.empty()) parsed.hostname.clear();
  return parsed;
}

}  // namespace commbench::gloo_backend
