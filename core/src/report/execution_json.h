// JSON of the execution events (results.jsonl "execution" lines, summary.json "executions").
// The outcome is flattened: the ExecutionInfo fields sit next to status, reason, ... so that
// each object reads on its own. Keys are the struct field names.
#pragma once

#include <nlohmann/json.hpp>

#include "report/reporter.h"

namespace commbench {

void to_json(nlohmann::json& j, const ExecutionInfo& e);
void to_json(nlohmann::ordered_json& j, const ExecutionInfo& e);
void from_json(const nlohmann::json& j, ExecutionInfo& e);

void to_json(nlohmann::json& j, const ExecutionOutcome& o);
void to_json(nlohmann::ordered_json& j, const ExecutionOutcome& o);
void from_json(const nlohmann::json& j, ExecutionOutcome& o);

}  // namespace commbench
