#include "plugin/catalog_format.h"

#include <filesystem>

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commbench/sdk/option_values.hpp"

#include "plugin/capability_names.h"

namespace commbench {
namespace {

struct CapabilityRow {
  const char* label;
  CapabilitySet set;
  uint64_t cb_capabilities::*mask;
};
constexpr CapabilityRow kRows[] = {
    {"ops", CapabilitySet::Ops, &cb_capabilities::ops},
    {"dtypes", CapabilitySet::Dtypes, &cb_capabilities::dtypes},
    {"reduce dtypes", CapabilitySet::ReduceDtypes, &cb_capabilities::reduce_dtypes},
    {"reduce ops", CapabilitySet::Redops, &cb_capabilities::redops},
    {"memory", CapabilitySet::MemTypes, &cb_capabilities::mem_types},
    {"flags", CapabilitySet::Flags, &cb_capabilities::flags},
};

// The options line of the listing: names only (`plugins NAME` describes each one).
std::string option_names(const PluginInfo& p) {
  if (!p.options) return "(not described: ABI before 1.2, or no option table)";
  if (p.options->empty()) return "-";
  std::string out;
  for (const auto& o : *p.options) out += (out.empty() ? "" : " ") + o.name;
  return out;
}

}  // namespace

std::string format_plugin_options(const PluginInfo& p) {
  if (!p.options)
    return fmt::format("{} does not describe its options (its table has no ABI 1.2 option descriptors): its "
                       "workers check them when they start.\n", p.name);
  if (p.options->empty()) return fmt::format("{} takes no options.\n", p.name);
  std::string out = fmt::format("Options ([run.options.{}]):\n", p.name);
  size_t width = 4;
  for (const auto& o : *p.options) width = std::max(width, o.name.size());
  for (const auto& o : *p.options) {
    std::string type(sdk::option_type_name(o.type));
    if (o.type == CB_OPTION_CHOICE) type = fmt::format("{}", fmt::join(o.choices, "|"));
    if (o.type == CB_OPTION_INT) type = fmt::format("int {}..{}", o.min, o.max);
    out += fmt::format("  {:<{}}  {}, default {}\n  {:<{}}  {}\n", o.name, width, type,
                       o.default_value.empty() ? "unset" : o.default_value, "", width, o.doc);
  }
  for (const auto& problem : p.option_problems) out += fmt::format("  malformed: {}\n", problem);
  return out;
}

namespace {

void append_plugin(std::string& out, const PluginInfo& p) {
  if (p.ok()) {
    out += fmt::format("{} {} (ABI {}.{})\n", p.name, p.version.empty() ? "(no version)" : p.version,
                       p.abi_major, p.abi_minor);
    if (!p.description.empty()) out += fmt::format("  {}\n", p.description);
    out += fmt::format("  {:<15}{}\n", "path", p.path);
    for (const auto& row : kRows) {
      auto names = capability_names(row.set, p.caps.*row.mask);
      out += fmt::format("  {:<15}{}\n", row.label, names.empty() ? "-" : fmt::format("{}", fmt::join(names, " ")));
    }
    out += fmt::format("  {:<15}{}\n", "options", option_names(p));
  } else {
    out += fmt::format("{} (cannot be used)\n", p.name);
    out += fmt::format("  {:<15}{}\n", "path", p.path);
    out += fmt::format("  {:<15}{}\n", "error", p.load_error);
  }
  out += "\n";
}

}  // namespace

std::string format_plugin_listing(const PluginListing& listing) {
  std::string out;
  if (listing.plugins.empty())
    out += "No plugins found. Build them, or point COMMBENCH_PLUGIN_PATH (or --plugin-path) at the "
           "directory holding libcommbench_backend_<name>.so files.\n\n";
  for (const auto& [name, info] : listing.plugins) append_plugin(out, info);

  if (!listing.shadowed.empty()) {
    out += "Shadowed (a plugin of the same name earlier on the search path is used instead):\n";
    for (const auto& s : listing.shadowed)
      out += fmt::format("  {}  (shadowed by {})\n", s.file.path, s.shadowed_by);
    out += "\n";
  }
  if (!listing.misnamed.empty()) {
    out += fmt::format("Not loaded ({}):\n", kMisnamedWhy);
    for (const auto& path : listing.misnamed) out += fmt::format("  {}\n", path);
    out += "\n";
  }
  if (!listing.not_files.empty()) {
    out += fmt::format("Not loaded ({}):\n", kNotAFileWhy);
    for (const auto& f : listing.not_files) out += fmt::format("  {}  ({})\n", f.path, f.why);
    out += "\n";
  }

  out += "Search path (first match of a name wins):\n";
  int index = 1;
  for (const auto& dir : listing.search_path) {
    std::error_code ec;
    bool exists = std::filesystem::is_directory(dir.path, ec);
    out += fmt::format("  {}. {}  [{}{}]\n", index++, dir.path, dir.origin, exists ? "" : ", missing");
  }
  return out;
}

nlohmann::json plugin_listing_json(const PluginListing& listing) {
  nlohmann::json search_path = nlohmann::json::array();
  for (const auto& dir : listing.search_path)
    search_path.push_back({{"path", dir.path}, {"origin", dir.origin}});
  nlohmann::json plugins = nlohmann::json::array();
  for (const auto& [name, info] : listing.plugins) plugins.push_back(to_json(info));
  nlohmann::json shadowed = nlohmann::json::array();
  for (const auto& s : listing.shadowed)
    shadowed.push_back({{"name", s.file.name}, {"path", s.file.path}, {"shadowed_by", s.shadowed_by}});
  nlohmann::json not_files = nlohmann::json::array();
  for (const auto& f : listing.not_files) not_files.push_back({{"path", f.path}, {"why", f.why}});
  return {{"search_path", std::move(search_path)}, {"plugins", std::move(plugins)},
          {"shadowed", std::move(shadowed)}, {"misnamed", listing.misnamed}, {"not_files", std::move(not_files)}};
}

std::string format_plugin_listing(const PluginCatalog& catalog, const std::vector<SearchDir>& search_path,
                                  bool json) {
  PluginListing listing;
  listing.search_path = search_path;
  listing.plugins = catalog;
  PluginScan scan = scan_plugin_dirs(search_dir_paths(search_path));
  listing.shadowed = std::move(scan.shadowed);
  listing.misnamed = std::move(scan.misnamed);
  listing.not_files = std::move(scan.not_files);
  if (!json) return format_plugin_listing(listing);
  return plugin_listing_json(listing).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace commbench
