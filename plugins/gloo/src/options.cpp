#include "options.h"

#include <iterator>

#include "commbench/sdk/plugin_options.hpp"
#include "errors.h"

namespace commbench::gloo_backend {

std::string_view algorithm_name(AllreduceAlgorithm algorithm) {
  const auto i = static_cast<size_t>(algorithm);
  return i + 1 < std::size(kAllreduceAlgorithmNames) ? kAllreduceAlgorithmNames[i] : "?";
}

GlooOptions parse_options(const cb_option* options, size_t count) {
  GlooOptions parsed;
  sdk::apply_options<GlooOptions>(kOptionTable, "gloo", options, count, parsed);
  bool hostname_given = false;
  sdk::for_each_option(options, count, [&](std::string_view key, std::string_view) { hostname_given |= key == "hostname"; });
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
