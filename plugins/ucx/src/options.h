// The ucx backend's options, from the experiment's [run.options.ucx] table.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <ucs/type/thread_mode.h>

#include "collectives/collectives.h"
#include "commbench/backend.h"
#include "commbench/sdk/option_table.hpp"

namespace commbench::ucx_backend {

enum class ProgressMode {
  kPolling,  // test()/wait() spin on ucp_worker_progress: lowest latency, one core per rank
  kWait,     // wait() sleeps on the worker's event fd between progress calls: saves the core
  kYield,    // spin, but give the CPU away (sched_yield) after every idle progress round: what
             // Open MPI does when ranks outnumber cores; no wake-up latency, no fd
};

enum class ErrorHandling {
  kNone,  // UCX's default: every protocol; a dead peer is noticed by the timeouts and the agent
  kPeer,  // UCP_ERR_HANDLING_MODE_PEER: a dead peer fails the ops on its endpoint at once, but
          // UCX 1.13 then avoids its zero-copy shared-memory protocols (8x less bandwidth here)
};

// Which of UCX's protocol implementations the context uses (UCX_PROTO_ENABLE): v2 is the newer
// one and UCX's own default from 1.16; v1 the older one, UCX's default before.
enum class Protocols { kAuto, kV1, kV2 };

// How protocol v1 moves a rendezvous message (UCX_RNDV_SCHEME): the receiver reads the sender's
// buffer (get, UCX's choice for host memory), or the sender writes into the receiver's (put).
enum class RndvScheme { kAuto, kGet, kPut };

struct UcxOptions {
  std::string transports;  // UCX_TLS syntax ("tcp", "sm,self", "^cma"); empty: UCX's default
  ucs_thread_mode_t thread_mode = UCS_THREAD_MODE_SINGLE;
  // Unset: polling when this host's ranks fit on its CPUs, yield when they do not (polling
  // ranks that outnumber the cores steal each other's time slices: milliseconds per message).
  std::optional<ProgressMode> progress;
  std::string rndv_thresh;  // UCX_RNDV_THRESH ("auto" or bytes); empty: UCX's default
  std::optional<size_t> single_copy_segment;  // option single_copy_segment (kOptionTable)
  Protocols protocols = Protocols::kAuto;
  RndvScheme rndv_scheme = RndvScheme::kAuto;
  bool registration = false;  // buffers from ucp_mem_map, their memory handles passed to ops
  ErrorHandling error_handling = ErrorHandling::kNone;
  // Endpoints to every peer at communicator creation; otherwise on first use. Default: eager
  // up to this many ranks, lazy above (wire-up to thousands of peers costs memory and time).
  int eager_endpoints_up_to = 64;
  // Eager messages sent to every peer at communicator creation (with eager endpoints), so that
  // UCX's shared-memory receive buffers are mapped before the first timed op; 0: none.
  int prime_messages = 256;
  // One rule for the communicator (it connects and primes) and the metadata (it says so).
  bool connects_eagerly(int world) const { return world <= eager_endpoints_up_to; }
  AlgorithmChoice algorithms;
  // Allreduce sends of data this rank wrote, up to this many bytes, ask for fast completion
  // (eager over shared memory; collectives/eager_sends.h); 0: UCX's choice for every message.
  size_t allreduce_eager_up_to = 64 * 1024;
  std::chrono::milliseconds timeout{300000};  // every op and wait
};

std::string parse_transports(std::string_view key, std::string_view value);  // checked UCX_TLS list
Algorithm parse_forced_algorithm(std::string_view key, std::string_view value);

// Indexed alike: the thread_mode option's choices and what they set.
inline constexpr const char* kThreadModeNames[] = {"single", "serialized", "multi", nullptr};
inline constexpr ucs_thread_mode_t kThreadModes[] = {UCS_THREAD_MODE_SINGLE, UCS_THREAD_MODE_SERIALIZED,
                                                     UCS_THREAD_MODE_MULTI};
// Indexed alike: the progress option's choices and the modes they set (after "auto").
inline constexpr const char* kProgressNames[] = {"auto", "polling", "wait", "yield", nullptr};
inline constexpr ProgressMode kProgressModes[] = {ProgressMode::kPolling, ProgressMode::kWait, ProgressMode::kYield};
inline constexpr const char* kErrorHandlingNames[] = {"none", "peer", nullptr};
// Indexed alike: the protocols option's choices and what they set.
inline constexpr const char* kProtocolsNames[] = {"auto", "v1", "v2", nullptr};
inline constexpr Protocols kProtocolChoices[] = {Protocols::kAuto, Protocols::kV1, Protocols::kV2};
// Indexed alike: the rndv_scheme option's choices and what they set.
inline constexpr const char* kRndvSchemeNames[] = {"auto", "get", "put", nullptr};
inline constexpr RndvScheme kRndvSchemeChoices[] = {RndvScheme::kAuto, RndvScheme::kGet, RndvScheme::kPut};
// The forced algorithms each op accepts, named from select.h's lists (valid_algorithms returns them).
inline constexpr auto kAllreduceChoices = algorithm_choices(kAllreduceAlgorithms);
inline constexpr auto kAllgatherChoices = algorithm_choices(kAllgatherAlgorithms);
inline constexpr auto kReducescatterChoices = algorithm_choices(kReducescatterAlgorithms);

// Every option, defined once: parse_options reads by it, the entry table exports it (ABI 1.2).
inline constexpr sdk::OptionDef<UcxOptions> kOptionTable[] = {
    {"transports", CB_OPTION_STRING, "", "UCX_TLS list (\"tcp\", \"sm,self\", \"^cma\"); unset: UCX's default",
     [](UcxOptions& o, const sdk::OptionValue& v) { o.transports = parse_transports(v.key, v.text); }},
    {"thread_mode", CB_OPTION_CHOICE, "single", "UCP worker thread mode",
     [](UcxOptions& o, const sdk::OptionValue& v) { o.thread_mode = kThreadModes[v.choice]; }, kThreadModeNames},
    {"progress", CB_OPTION_CHOICE, "auto", "auto: polling if this host's ranks fit its CPUs, else yield (sched_yield when idle)",
     [](UcxOptions& o, const sdk::OptionValue& v) {
       if (v.choice == 0) o.progress.reset();
       else o.progress = kProgressModes[v.choice - 1];
     },
     kProgressNames},
    {"rndv_thresh", CB_OPTION_STRING, "", "UCX_RNDV_THRESH: auto or a byte count; unset: UCX's default",
     [](UcxOptions& o, const sdk::OptionValue& v) {
       o.rndv_thresh = v.text == "auto" ? std::string(v.text) : std::to_string(sdk::parse_bytes_option(v.key, v.text));
     }},
    {"single_copy_segment", CB_OPTION_BYTES, "",
     "UCX_SCOPY_SEG_SIZE: a single-copy shared-memory transfer (cma, knem) moves in pieces of this size, "
     "one system call each; 0: whole messages; unset: UCX_SCOPY_SEG_SIZE, UCX_CMA_SEG_SIZE or "
     "UCX_KNEM_SEG_SIZE if set, else whole messages (UCX's default: 512 KiB)",
     [](UcxOptions& o, const sdk::OptionValue& v) { o.single_copy_segment = v.bytes; }},
    {"protocols", CB_OPTION_CHOICE, "auto",
     "UCX_PROTO_ENABLE: v1 (n) or v2 (y); auto: UCX_PROTO_ENABLE if set, else UCX's default",
     [](UcxOptions& o, const sdk::OptionValue& v) { o.protocols = kProtocolChoices[v.choice]; }, kProtocolsNames},
    {"rndv_scheme", CB_OPTION_CHOICE, "auto",
     "UCX_RNDV_SCHEME: get (the receiver reads) or put (the sender writes); auto: UCX_RNDV_SCHEME if set, else UCX's default",
     [](UcxOptions& o, const sdk::OptionValue& v) { o.rndv_scheme = kRndvSchemeChoices[v.choice]; }, kRndvSchemeNames},
    {"registration", CB_OPTION_BOOL, "off", "buffers from ucp_mem_map, their memory handles passed to ops",
     [](UcxOptions& o, const sdk::OptionValue& v) { o.registration = v.boolean; }},
    {"error_handling", CB_OPTION_CHOICE, "none", "peer: a dead peer fails its ops at once (slower shared memory)",
     [](UcxOptions& o, const sdk::OptionValue& v) { o.error_handling = v.choice == 1 ? ErrorHandling::kPeer : ErrorHandling::kNone; },
     kErrorHandlingNames},
    {.name = "eager_endpoints_up_to", .type = CB_OPTION_INT, .default_value = "64",
     .doc = "connect to every peer at communicator creation up to this many ranks, else on first use",
     .apply = [](UcxOptions& o, const sdk::OptionValue& v) { o.eager_endpoints_up_to = static_cast<int>(v.integer); },
     .min = 0, .max = INT32_MAX},
    {.name = "prime_messages", .type = CB_OPTION_INT, .default_value = "256",
     .doc = "eager messages of 8000 B sent to every peer at communicator creation (endpoints connected eagerly), "
            "so shared-memory receive buffers are mapped before anything is timed; 0: none",
     .apply = [](UcxOptions& o, const sdk::OptionValue& v) { o.prime_messages = static_cast<int>(v.integer); },
     .min = 0, .max = kChannelSteps},
    {"allreduce_algorithm", CB_OPTION_CHOICE, "auto", "forced allreduce algorithm (auto: by message size)",
     [](UcxOptions& o, const sdk::OptionValue& v) { o.algorithms.allreduce = parse_forced_algorithm(v.key, v.text); },
     kAllreduceChoices.data()},
    {"allgather_algorithm", CB_OPTION_CHOICE, "auto", "forced allgather algorithm (auto: by message size)",
     [](UcxOptions& o, const sdk::OptionValue& v) { o.algorithms.allgather = parse_forced_algorithm(v.key, v.text); },
     kAllgatherChoices.data()},
    {"reducescatter_algorithm", CB_OPTION_CHOICE, "auto", "forced reducescatter algorithm (auto: by message size)",
     [](UcxOptions& o, const sdk::OptionValue& v) { o.algorithms.reducescatter = parse_forced_algorithm(v.key, v.text); },
     kReducescatterChoices.data()},
    {"small_message_threshold", CB_OPTION_BYTES, "",
     "bytes per rank from which auto leaves the latency-bound algorithms (recursive doubling, pairwise), for every op; "
     "unset: 64 KiB for allreduce and reducescatter",
     [](UcxOptions& o, const sdk::OptionValue& v) { o.algorithms.small_message_bytes = v.bytes; }},
    {"ring_threshold", CB_OPTION_BYTES, "4MiB", "bytes per rank from which auto picks the pipelined ring",
     [](UcxOptions& o, const sdk::OptionValue& v) { o.algorithms.ring_bytes = v.bytes; }},
    {"ring_segment", CB_OPTION_BYTES, "0", "the ring's pipeline segment; 0: whole blocks",
     [](UcxOptions& o, const sdk::OptionValue& v) { o.algorithms.segment_bytes = v.bytes; }},
    {"allreduce_eager_up_to", CB_OPTION_BYTES, "64KiB",
     "allreduce messages up to this size that carry data this rank wrote (in place, or reduced in the op) "
     "ask UCX for fast completion (protocol v1: eager, not read by the peer); 0: UCX's choice for every message",
     [](UcxOptions& o, const sdk::OptionValue& v) { o.allreduce_eager_up_to = v.bytes; }},
    {.name = "timeout_ms", .type = CB_OPTION_INT, .default_value = "300000", .doc = "limit of every op and wait",
     .apply = [](UcxOptions& o, const sdk::OptionValue& v) { o.timeout = std::chrono::milliseconds(v.integer); },
     .min = 1, .max = INT32_MAX},
};

// Parses and validates; throws PluginError(CB_ERR_INVALID_ARGUMENT) naming the bad key or value
// and listing what is accepted.
UcxOptions parse_options(const cb_option* options, size_t count);

std::string_view thread_mode_name(ucs_thread_mode_t mode);
std::string_view progress_name(ProgressMode mode);

}  // namespace commbench::ucx_backend
