// What metadata/rank<N>.json says about the host and the rank (docs/observability.md, "Metadata"):
// OS and kernel, CPU model, cores, NUMA layout, memory, NICs with InfiniBand devices and ports
// (sysfs, under COMMBENCH_SYSFS_ROOT when set), GPUs and their topology (NVML), environment
// variables by prefix, commbench's build id, the experiment file's SHA-256.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace commbench {

// The host's facts (agent side; read once per job).
nlohmann::json host_facts();
// The calling process's CPU affinity and the NUMA nodes those CPUs are on (worker side: its
// binding as the launcher or the OS left it).
nlohmann::json process_binding();
// Variables whose names start with NCCL_, UCX_, GLOO_, CUDA_, OMPI_, SLURM_ or TORCHELASTIC_.
nlohmann::json environment_by_prefix(const std::map<std::string, std::string>& env);
// The GNU build id of this executable (hex), or "" when it has none.
std::string executable_build_id();
// Hex SHA-256 of a file's bytes, or "" when it cannot be read.
std::string sha256_of_file(const std::string& path);
// The short digest summary.json keeps per host.
nlohmann::json host_digest(const nlohmann::json& facts);
// "<gpu>-<driver>-<cuda>" for naming a results folder after the hardware (seed 003), from the
// host facts; "" when there is no GPU.
std::string hardware_folder_name(const nlohmann::json& facts);
// `output_dir` with "{hardware}" replaced by hardware_folder_name(host_facts()), or "cpu-only"
// on a host without an NVIDIA GPU; unchanged without the placeholder.
std::string expand_hardware_placeholder(const std::string& output_dir);

}  // namespace commbench
