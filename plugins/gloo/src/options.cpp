#include "options.h"

#include <array>
#include <charconv>

#include "errors.h"

namespace commbench::gloo_backend {
namespace {

constexpr std::array<std::string_view, 5> kValidKeys = {"transport", "iface", "hostname",
                                                        "allreduce_algorithm", "timeout_ms"};
constexpr std::array<AllreduceAlgorithm, 4> kAlgorithms = {
    AllreduceAlgorithm::kRing, AllreduceAlgorithm::kBcube, AllreduceAlgorithm::kRingChunked,
    AllreduceAlgorithm::kHalvingDoubling};

template <size_t N>
std::string comma_list(const std::array<std::string_view, N>& items) {
  std::string out;
  for (std::string_view item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

[[noreturn]] void bad_value(std::string_view key, std::string_view value, std::string_view expected) {
  fail(CB_ERR_INVALID_ARGUMENT, "option " + std::string(key) + " = \"" + std::string(value) +
                                    "\" is not valid; expected " + std::string(expected));
}

AllreduceAlgorithm parse_algorithm(std::string_view value) {
  for (AllreduceAlgorithm a : kAlgorithms)
    if (algorithm_name(a) == value) return a;
  bad_value("allreduce_algorithm", value, "one of ring, bcube, ring_chunked, halving_doubling");
}

std::chrono::milliseconds parse_timeout(std::string_view value) {
  long long ms = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
  if (ec != std::errc() || end != value.data() + value.size() || ms <= 0)
    bad_value("timeout_ms", value, "a positive number of milliseconds, e.g. \"60000\"");
  return std::chrono::milliseconds(ms);
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
  for (size_t i = 0; i < count; ++i) {
    // Read only the fields the host's cb_option has (struct_size rule of the ABI).
    const cb_option& option = options[i];
    if (option.struct_size < CB_STRUCT_SIZE(cb_option, value) || option.key == nullptr ||
        option.value == nullptr)
      fail(CB_ERR_INVALID_ARGUMENT, "option #" + std::to_string(i) + " is malformed (null key or value)");
    const std::string_view key = option.key;
    const std::string_view value = option.value;
    if (key == "transport") {
      if (value != "tcp") bad_value(key, value, "\"tcp\" (the only transport this plugin builds)");
      parsed.transport = value;
    } else if (key == "iface") {
      if (value.empty()) bad_value(key, value, "a network interface name such as \"lo\" or \"eth0\"");
      parsed.iface = value;
    } else if (key == "hostname") {
      if (value.empty()) bad_value(key, value, "a host name or IP address of this host");
      parsed.hostname = value;
      hostname_given = true;
    } else if (key == "allreduce_algorithm") {
      parsed.allreduce_algorithm = parse_algorithm(value);
    } else if (key == "timeout_ms") {
      parsed.timeout = parse_timeout(value);
    } else {
      fail(CB_ERR_INVALID_ARGUMENT, "unknown option '" + std::string(key) +
                                        "' for backend gloo; valid options are: " +
                                        comma_list(kValidKeys));
    }
  }
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
