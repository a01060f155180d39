// The table of run settings: one row per RunSettings member (run_settings.h says what a row
// drives). Read by the layer reader, the merger, the JSON writers and `commbench settings`.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "experiment/run_settings.h"
#include "experiment/toml_fields.h"

namespace commbench {

// One row of the table.
struct RunSetting {
  std::string_view key;       // as written in [[run]] / [defaults]
  std::string_view json_key;  // in as_parsed and the execution JSON ("timeout_s" for "timeout")
  std::string_view type;      // docs: "integer ≥ 0", "duration", ...
  std::string_view meaning;   // docs: what it does (Markdown)
  // Reads `node` into `to`; false after reporting to `sink` when the value is invalid.
  bool (*read)(const toml::node& node, std::string_view key, DiagnosticSink& sink,
               WhereMap& where, RunSettings& to);
  void (*copy)(const RunSettings& from, RunSettings& to);
  nlohmann::json (*to_json)(const RunSettings& from);              // the value at json_key
  void (*from_json)(const nlohmann::json& value, RunSettings& to);  // the value at json_key
  std::string (*default_text)();  // docs: the built-in default, as TOML
  std::string_view default_words;  // docs: replaces default_text() when the value needs words
};

// The default as the docs show it.
std::string default_text(const RunSetting& s);

std::span<const RunSetting> run_settings();
const RunSetting* find_run_setting(std::string_view key);

// A key a [[run]] table accepts that is not a RunSettings field (read by run_layer.cpp).
struct RunKeyDoc {
  std::string_view key;
  std::string_view type;
  std::string_view default_text;
  std::string_view meaning;
};
std::span<const RunKeyDoc> structural_run_keys();

// The "Run keys" table of docs/configuration.md, generated from both lists in file order.
std::string run_keys_markdown();

}  // namespace commbench
