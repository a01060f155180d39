// `commbench conformance PLUGIN`: the suite a vendor runs before shipping a plugin. Loads the
// plugin alone (a probe subprocess, as `commbench plugins` does), then runs the rank suite
// (conformance/rank_suite.h) at each number of ranks, every rank a process of its own started
// like a worker and connected through a bootstrap store, and merges what the ranks report.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "conformance/conformance_report.h"

namespace commbench {

struct ConformanceOptions {
  std::string plugin_path;  // the resolved file
  std::vector<int> world_sizes{1, 2, 3, 4};
  std::map<std::string, std::string> backend_options;  // handed to init
  int32_t op_timeout_ms = 30000;
  uint64_t max_bytes = 4u << 20;  // the size ladder's top: 4 KiB ± 1 element ... this
  double stage_timeout_s = 900;  // a whole world size; past it the ranks are killed and it fails
  std::string self_exe;
};

ConformanceReport run_conformance(const ConformanceOptions& opts);

}  // namespace commbench
