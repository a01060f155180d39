// Reading the host's /sys and /proc for telemetry and metadata. COMMBENCH_SYSFS_ROOT, when set,
// is a directory that stands for "/" in these reads (a copy of another host's tree, a container's
// view, or a test's fake tree); docs/observability.md lists the files read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace commbench {

// "" (the real root) or the value of COMMBENCH_SYSFS_ROOT, without a trailing '/'.
const std::string& host_root();
// host_root() + absolute path.
std::string host_path(const std::string& absolute);

// The file's text with trailing whitespace removed; nullopt when it cannot be read.
std::optional<std::string> read_host_file(const std::string& absolute);
std::optional<double> read_host_number(const std::string& absolute);
// Names in a directory (no "." or ".."), sorted naturally (cpu2 before cpu10); empty if unreadable.
std::vector<std::string> list_host_dir(const std::string& absolute);
// The target of a symbolic link's last component ("mlx5_core"), or "".
std::string host_link_name(const std::string& absolute);

}  // namespace commbench
