// `commbench run FILE --set key=value` (issue 14 §4): keys of the file replaced before it is
// read, so an override gets exactly the validation the file would, and its errors name the
// override ("--set run.iterations=0: error: 'iterations' must be at least 1, got 0").
//
//   run.<key>=<v>       in every [[run]]           defaults.<key>=<v>  in [defaults] (created)
//   <top-level key>=<v> at the top level (name, output_dir, seed, report)
// <v> is a TOML value (100, [2, 4], "cuda", { busbw_gbps = ">= 1" }); a bare word that is not one
// is taken as a string, so --set run.memory=cuda works without shell-quoted quotes.
#pragma once

#include <string>
#include <vector>

#include <toml++/toml.h>

#include "experiment/toml_fields.h"

namespace commbench {

// Applies `sets` to `root` in order; a malformed override is reported to `sink` and skipped.
void apply_overrides(toml::table& root, const std::vector<std::string>& sets, DiagnosticSink& sink);

}  // namespace commbench
