// Reading list-valued keys (backends, ops, dtypes, sizes, ...) element by element, so that each
// bad element gets its own diagnostic at its own position and `where` learns every element's
// position ("ops[2]") for checks that run later.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "experiment/toml_fields.h"

namespace commbench {

enum class ListForm {
  Array,          // backends = ["gloo"]
  Scalar,         // backend = "gloo": the singular alias, a one-element list
  ArrayOrScalar,  // placement = "in_place" or placement = ["in_place", "out_of_place"]
};

struct ListKey {
  std::string_view key;        // as written, for messages: "backend"
  std::string_view canonical;  // key in `where`: "backends"
  ListForm form;
  std::string_view element;    // one element, for messages: "a string"
  std::string_view elements;   // several: "strings"
  std::string_view other_form_key;  // the alias to suggest on a shape mismatch ("backends"), or ""
};

// Reads `node` as described by `spec`. `read_element(node, element_key)` returns the element or
// reports why not; `describe(value)` names a value in the duplicate message ("'gloo'", "4096 B").
// Returns nothing if the list has any error (every element is still checked).
template <class T, class ReadElement, class Describe>
std::optional<std::vector<T>> read_list(DiagnosticSink& sink, const toml::node& node,
                                        const ListKey& spec, WhereMap& where,
                                        ReadElement&& read_element, Describe&& describe) {
  const std::string canonical(spec.canonical);
  where[canonical] = sink.pos(node);
  const toml::array* array = node.as_array();
  if (array && spec.form == ListForm::Scalar) {
    report_wrong_type(sink, node, spec.element, spec.key,
                      fmt::format(" (use '{}' for a list)", spec.other_form_key));
    return std::nullopt;
  }
  if (!array && spec.form == ListForm::Array) {
    const std::string hint = spec.other_form_key.empty()
                                 ? ""
                                 : fmt::format(" (use '{}' for a single value)", spec.other_form_key);
    report_wrong_type(sink, node, fmt::format("an array of {}", spec.elements), spec.key, hint);
    return std::nullopt;
  }

  std::vector<const toml::node*> elements;
  if (array) {
    for (const auto& e : *array) elements.push_back(&e);
    if (elements.empty()) {
      sink.error(sink.pos(node), fmt::format("'{}' is empty: list at least one value", spec.key));
      return std::nullopt;
    }
  } else {
    elements.push_back(&node);
  }

  std::vector<T> values;
  std::set<std::string> seen;
  bool ok = true;
  for (size_t i = 0; i < elements.size(); ++i) {
    const toml::node& e = *elements[i];
    const std::string element_key = array ? fmt::format("{}[{}]", spec.key, i) : std::string(spec.key);
    where[fmt::format("{}[{}]", canonical, i)] = sink.pos(e);
    std::optional<T> value = read_element(e, element_key);
    if (!value) {
      ok = false;
      continue;
    }
    const std::string name = describe(*value);
    if (!seen.insert(name).second) {
      sink.error(sink.pos(e), fmt::format("{} is listed twice in '{}'", name, spec.key));
      ok = false;
      continue;
    }
    values.push_back(std::move(*value));
  }
  if (!ok) return std::nullopt;
  return values;
}

}  // namespace commbench
