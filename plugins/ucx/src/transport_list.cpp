#include "transport_list.h"

namespace commbench::ucx_backend {

std::vector<std::string_view> split_ucx_list(std::string_view list) {
  std::vector<std::string_view> items;
  if (list.empty()) return items;
  for (;;) {
    const size_t comma = list.find(',');
    items.push_back(list.substr(0, comma));
    if (comma == std::string_view::npos) return items;
    list.remove_prefix(comma + 1);
  }
}

bool tls_allows(std::string_view tls, std::string_view name) {
  const bool excluding = !tls.empty() && tls.front() == '^';
  if (excluding) tls.remove_prefix(1);
  bool listed = false, all = false;
  int items = 0;
  for (std::string_view t : split_ucx_list(tls)) {
    if (t.empty()) continue;  // UCX skips empty items
    ++items;
    const bool strict = t.front() == '\\';
    if (strict) t.remove_prefix(1);
    if (t.ends_with(":aux")) t.remove_suffix(4);
    all |= t == "all";
    listed |= t == name || (!strict && (t == "sm" || t == "shm"));
  }
  if (items == 0 || (all && items == 1)) return true;  // unset, "all" or "^all": every transport
  return listed != excluding;
}

bool names_rdma_transport(std::string_view tls) {
  if (tls.empty() || tls.front() == '^') return false;  // UCX's default, or "all but ..."
  for (std::string_view name : split_ucx_list(tls)) {
    if (name.starts_with('\\')) name.remove_prefix(1);  // a strict name is still that transport
    for (std::string_view prefix : {"ib", "rc", "ud", "dc", "ugni"})
      if (name.starts_with(prefix)) return true;
  }
  return false;
}

}  // namespace commbench::ucx_backend
