// Options of the nccl and ncclx plugins ([run.options.nccl] / [run.options.ncclx]).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include <nccl.h>

#include "commbench/backend.h"
#include "commbench/sdk/option_table.hpp"

namespace commbench::nccl_backend {

struct NcclOptions {
  std::optional<int> blocking;          // ncclConfig_t.blocking (unset: 1, NCCL's and nccl-tests' default)
  std::optional<int> cga_cluster_size;  // ncclConfig_t.cgaClusterSize
  std::optional<int> min_ctas;          // ncclConfig_t.minCTAs
  std::optional<int> max_ctas;          // ncclConfig_t.maxCTAs
  std::string net_name;                 // ncclConfig_t.netName ("IB", "Socket")
  bool registration = false;            // buffers from ncclMemAlloc, registered with the communicator
  std::optional<int> device;            // CUDA device; default: the local rank
  std::string library;                  // ncclx only: the NCCL-API library to load
  std::chrono::milliseconds timeout{300000};  // every wait; past it the communicator is aborted
};

// Every option of the nccl plugin, defined once: parse_nccl_options reads by it and the entry
// table exports it (ABI 1.2). ncclx takes these and `library`.
inline constexpr sdk::OptionDef<NcclOptions> kNcclOptionTable[] = {
    {"blocking", CB_OPTION_BOOL, "on", "ncclConfig_t.blocking; off: non-blocking init, abandoned at a deadline",
     [](NcclOptions& o, const sdk::OptionValue& v) { o.blocking = v.boolean ? 1 : 0; }},
    {.name = "cga_cluster_size", .type = CB_OPTION_INT, .default_value = "", .doc = "ncclConfig_t.cgaClusterSize (unset: NCCL's)",
     .apply = [](NcclOptions& o, const sdk::OptionValue& v) { o.cga_cluster_size = static_cast<int>(v.integer); },
     .min = 0, .max = 1 << 16},
    {.name = "min_ctas", .type = CB_OPTION_INT, .default_value = "", .doc = "ncclConfig_t.minCTAs (unset: NCCL's; NCCL refuses 0)",
     .apply = [](NcclOptions& o, const sdk::OptionValue& v) { o.min_ctas = static_cast<int>(v.integer); },
     .min = 1, .max = 1 << 16},
    {.name = "max_ctas", .type = CB_OPTION_INT, .default_value = "", .doc = "ncclConfig_t.maxCTAs (unset: NCCL's; NCCL refuses 0)",
     .apply = [](NcclOptions& o, const sdk::OptionValue& v) { o.max_ctas = static_cast<int>(v.integer); },
     .min = 1, .max = 1 << 16},
    {"net_name", CB_OPTION_STRING, "", "ncclConfig_t.netName (\"IB\", \"Socket\"); unset: NCCL chooses",
     [](NcclOptions& o, const sdk::OptionValue& v) { o.net_name = v.text; }},
    {"registration", CB_OPTION_BOOL, "off", "buffers from ncclMemAlloc, registered with the communicator",
     [](NcclOptions& o, const sdk::OptionValue& v) { o.registration = v.boolean; }},
    {.name = "device", .type = CB_OPTION_INT, .default_value = "", .doc = "CUDA device (unset: the local rank)",
     .apply = [](NcclOptions& o, const sdk::OptionValue& v) { o.device = static_cast<int>(v.integer); },
     .min = 0, .max = 1 << 16},
    {.name = "timeout_ms", .type = CB_OPTION_INT, .default_value = "300000",
     .doc = "limit of every wait; past it the communicator is aborted",
     .apply = [](NcclOptions& o, const sdk::OptionValue& v) { o.timeout = std::chrono::milliseconds(v.integer); },
     .min = 1, .max = INT32_MAX},
};
inline constexpr auto kNcclxOptionTable = sdk::with_option(
    kNcclOptionTable,
    sdk::OptionDef<NcclOptions>{"library", CB_OPTION_STRING, "",
                                "NCCL-API library to load (unset: $COMMBENCH_NCCLX_LIBRARY, else libnccl.so.2)",
                                [](NcclOptions& o, const sdk::OptionValue& v) { o.library = v.text; }});

// `plugin` is "nccl" or "ncclx" (only ncclx takes `library`).
NcclOptions parse_nccl_options(const cb_option* options, size_t count, const char* plugin);

}  // namespace commbench::nccl_backend

namespace commbench::nccl_backend {

// The ncclConfig_t for these options. min_ctas alone also sets maxCTAs (to at least min_ctas):
// NCCL checks minCTAs <= maxCTAs, and an undefined maxCTAs fails that check.
ncclConfig_t make_nccl_config(const NcclOptions& options);

}  // namespace commbench::nccl_backend
