// The per-job output folder: <base>/<experiment>-<YYYYmmdd-HHMMSS>, never reused.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>

namespace commbench {

// Creates base_dir (and parents) if needed, then a fresh folder named after the experiment and
// `time` (local time). If that name is taken, tries "-2", "-3", ...; each attempt is a mkdir that
// fails when the folder exists, so two jobs started in the same second never share a folder.
// Throws OutputError (report/output_file.h) saying which path failed, why, and what to do.
std::filesystem::path make_job_output_dir(const std::filesystem::path& base_dir,
                                          std::string_view experiment_name,
                                          std::chrono::system_clock::time_point time);

// The experiment name reduced to characters that are safe in a file name on every common file
// system: [A-Za-z0-9._-]; anything else becomes '_'. Never empty, never starts with '.' or '-'.
std::string sanitize_file_name(std::string_view name);

}  // namespace commbench
