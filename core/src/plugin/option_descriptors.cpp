#include "plugin/option_descriptors.h"

#include <set>

#include <fmt/format.h>

#include "commbench/sdk/dtypes.hpp"
#include "commbench/sdk/option_values.hpp"

namespace commbench {
namespace {

// More than this is a garbage count, not a plugin's options.
constexpr size_t kMaxOptionDescriptors = 4096;
constexpr size_t kDescriptorSize = CB_STRUCT_SIZE(cb_option_descriptor, max);
// A later minor may append fields, but not kilobytes of them: past this struct_size is garbage.
constexpr size_t kMaxDescriptorSize = 1024;

// A descriptor's problems ("" each when fine); appends the option to `out` when it has none.
void read_one(const cb_option_descriptor& d, size_t i, bool newer_minor, std::set<std::string>& names,
              OptionDescriptors& out) {
  auto problem = [&](const std::string& what) {
    out.problems.push_back(fmt::format("option descriptor #{}{}: {}", i,
                                       d.name != nullptr ? fmt::format(" ({})", d.name) : "", what));
  };
  const size_t before = out.problems.size();
  if (d.name == nullptr || *d.name == '\0') problem("name is NULL or empty");
  else if (!names.insert(d.name).second) problem("name is used by an earlier descriptor too");
  if (d.doc == nullptr) problem("doc is NULL");
  if (d.default_value == nullptr) problem("default_value is NULL (use \"\" for no fixed default)");
  // A type from a later minor than this core knows: its values are taken as text (not checked
  // here; the plugin's init still judges them). From a plugin of this minor or older it is garbage.
  // The type is range-checked as an integer before it is read as the enum (a newer plugin's).
  const auto known_type = sdk::abi_enum<cb_option_type>(sdk::abi_value(d.type), CB_OPTION_TYPE_COUNT_V1_2);
  if (!known_type && !newer_minor) problem(fmt::format("type {} is not a cb_option_type", sdk::abi_value(d.type)));
  const cb_option_type type = known_type.value_or(CB_OPTION_STRING);
  if (type == CB_OPTION_CHOICE && (d.choices == nullptr || d.choices[0] == nullptr)) problem("a choice without choices");
  if (type == CB_OPTION_INT && d.min > d.max) problem(fmt::format("min {} is above max {}", d.min, d.max));
  if (out.problems.size() != before) return;

  PluginOption o;
  o.name = d.name;
  o.type = type;
  o.default_value = d.default_value;
  o.doc = d.doc;
  for (const char* const* c = type == CB_OPTION_CHOICE ? d.choices : nullptr; c != nullptr && *c != nullptr; ++c)
    o.choices.emplace_back(*c);
  o.min = d.min;
  o.max = d.max;
  if (!o.default_value.empty())
    if (const std::string expected = o.check_value(o.default_value); !expected.empty())
      return problem(fmt::format("default \"{}\" is not a valid value: expected {}", o.default_value, expected));
  out.options->push_back(std::move(o));
}

}  // namespace

std::string PluginOption::check_value(const std::string& text) const {
  std::vector<const char*> list;
  for (const auto& c : choices) list.push_back(c.c_str());
  list.push_back(nullptr);
  cb_option_descriptor d{};
  d.struct_size = kDescriptorSize;
  d.name = name.c_str();
  d.type = type;
  d.choices = list.data();
  d.min = min;
  d.max = max;
  sdk::OptionValue v;
  return sdk::read_option_value(d, text, v) ? "" : sdk::option_expectation(d);
}

OptionDescriptors read_option_descriptors(const cb_backend_api& api) {
  OptionDescriptors out;
  if (api.struct_size < CB_STRUCT_SIZE(cb_backend_api, num_option_descriptors) || api.option_descriptors == nullptr)
    return out;
  out.options.emplace();
  const size_t n = api.num_option_descriptors;
  if (n == 0) return out;
  if (n > kMaxOptionDescriptors) {
    out.problems.push_back(fmt::format("num_option_descriptors is {}: not a plausible count", n));
    return out;
  }
  // Elements are as long as their struct_size says (rounded up to the struct's alignment), so a
  // later minor may append fields; all must agree, and cover at least the 1.2 fields.
  const size_t size = api.option_descriptors[0].struct_size;
  if (size > kMaxDescriptorSize) {
    out.problems.push_back(fmt::format("option descriptor struct_size is {}: not a plausible size (set it with "
                                       "CB_STRUCT_SIZE(cb_option_descriptor, max))", size));
    return out;
  }
  if (size < kDescriptorSize) {
    out.problems.push_back(fmt::format("option descriptor struct_size is {}, less than the {} bytes of ABI 1.2 "
                                       "(set it with CB_STRUCT_SIZE(cb_option_descriptor, max))", size, kDescriptorSize));
    return out;
  }
  const size_t stride = (size + alignof(cb_option_descriptor) - 1) / alignof(cb_option_descriptor) * alignof(cb_option_descriptor);
  const auto* base = reinterpret_cast<const unsigned char*>(api.option_descriptors);
  std::set<std::string> names;
  for (size_t i = 0; i < n; ++i) {
    const auto& d = *reinterpret_cast<const cb_option_descriptor*>(base + i * stride);
    if (d.struct_size != size) {
      out.problems.push_back(fmt::format("option descriptor #{}: struct_size {} differs from the first one's {}", i,
                                         d.struct_size, size));
      return out;
    }
    read_one(d, i, api.abi_minor > CB_ABI_MINOR, names, out);
  }
  return out;
}

nlohmann::json to_json(const PluginOption& o) {
  nlohmann::json j = {{"name", o.name},
                      {"type", sdk::option_type_name(o.type)},
                      {"default", o.default_value},
                      {"doc", o.doc}};
  if (o.type == CB_OPTION_CHOICE) j["choices"] = o.choices;
  if (o.type == CB_OPTION_INT) {
    j["min"] = o.min;
    j["max"] = o.max;
  }
  return j;
}

PluginOption plugin_option_from_json(const nlohmann::json& j) {
  PluginOption o;
  o.name = j.value("name", "");
  const std::string type = j.value("type", "string");
  for (int t = 0; t < CB_OPTION_TYPE_COUNT_V1_2; ++t)
    if (sdk::option_type_name(static_cast<cb_option_type>(t)) == type) o.type = static_cast<cb_option_type>(t);
  o.default_value = j.value("default", "");
  o.doc = j.value("doc", "");
  o.choices = j.value("choices", std::vector<std::string>{});
  o.min = j.value("min", int64_t{0});
  o.max = j.value("max", int64_t{0});
  return o;
}

}  // namespace commbench
