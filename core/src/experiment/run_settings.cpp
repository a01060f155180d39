#include "experiment/run_setting_table.h"

#include <array>

#include <fmt/format.h>

#include "experiment/run_setting_codecs.h"

namespace commbench {
namespace {

using nlohmann::json;
namespace codec = setting_codec;

// A row for member `M` read with codec `C`. `default_words` replaces the generated default in
// the docs where the built-in value is not the whole story ("sized per execution").
template <auto M, class C>
constexpr RunSetting row(std::string_view key, std::string_view json_key, std::string_view type,
                         std::string_view meaning) {
  return RunSetting{
      key, json_key, type, meaning,
      [](const toml::node& n, std::string_view k, DiagnosticSink& sink, WhereMap& where, RunSettings& to) {
        where[std::string(k)] = sink.pos(n);
        auto v = C::read(n, k, sink, where);
        if (!v) return false;
        to.*M = std::move(*v);
        return true;
      },
      [](const RunSettings& from, RunSettings& to) { to.*M = from.*M; },
      [](const RunSettings& from) { return C::to_json(from.*M); },
      [](const json& from, RunSettings& to) { to.*M = C::from_json(from); },
      [] { return C::text(RunSettings{}.*M); },
      {}};
}

constexpr RunSetting with_default(RunSetting r, std::string_view words) {
  r.default_words = words;
  return r;
}

const std::array kSettings{
    row<&RunSettings::memory, codec::Named<cb_mem, codec::MemoryNames>>(
        "memory", "memory", "string",
        "buffer memory: `host` (pageable), `host_pinned` (page-locked), `cuda` (device memory; a "
        "host-memory backend such as Gloo gets it staged through pinned host buffers, copies timed "
        "— docs/gpu.md)"),
    row<&RunSettings::warmup, codec::IntAtLeast<0>>("warmup", "warmup", "integer ≥ 0",
                                             "untimed iterations before the timed ones, for every case"),
    row<&RunSettings::iterations, codec::IntAtLeast<1>>(
        "iterations", "iterations", "integer ≥ 1",
        "timed iterations per case (a minimum when `min_time` is set; one round's worth with "
        "`target_cv`)"),
    row<&RunSettings::repeats, codec::IntAtLeast<1>>(
        "repeats", "repeats", "integer ≥ 1",
        "measure every case this many times, each repeat a separate execution in fresh worker "
        "processes, in rounds (every backend and world size of the run once, then again), so the "
        "records show run-to-run variation — what `commbench compare` needs to tell a regression "
        "from noise (docs/reports.md, \"Comparing jobs\"); records carry `repeat`"),
    with_default(row<&RunSettings::min_time_s, codec::Duration<true>>(
                     "min_time", "min_time_s", "duration",
                     "keep iterating a case until its timed iterations (on the busiest rank) add up to at least this long (or "
                     "`max_iterations`): the warm-up's time per op sizes the first round, and rounds "
                     "follow, sized from the timed ops, until the time is reached"),
                 "`0` (off)"),
    row<&RunSettings::max_iterations, codec::IntAtLeast<1>>(
        "max_iterations", "max_iterations", "integer ≥ `iterations`",
        "upper bound on timed iterations when `min_time` or `target_cv` is set (left unset, it rises to "
        "`iterations` when those are more)"),
    row<&RunSettings::check, codec::Bool>("check", "check", "boolean",
                                   "check the results of the first operation and of one after the timed iterations (every element, every rank; docs/metrics.md, as nccl-tests checks); a mismatch fails the case and the job"),
    row<&RunSettings::oversubscribe, codec::Bool>(
        "oversubscribe", "oversubscribe", "boolean",
        "allow a local run (no launcher) more ranks than 8 per CPU this process may use: without it "
        "such a world size is refused at validation, since its workers would only compete for the "
        "CPUs (and thousands of them can bring the host down). A world the host's process limits "
        "(`pids.max` of its cgroup, `RLIMIT_NPROC`, the kernel's `pid_max` and `threads-max`) cannot hold "
        "is refused either way"),
    row<&RunSettings::cpu_binding, codec::Named<CpuBinding, codec::CpuBindingNames>>(
        "cpu_binding", "cpu_binding", "string",
        "bind each rank the agent starts to CPUs, as Open MPI's `--map-by` / `--bind-to` core or numa "
        "do: `none` leaves them where the launcher or the OS put them; `core` gives local rank r the "
        "r-th physical core (its hardware threads), `numa` the r-th NUMA node (its CPUs; memory then "
        "comes from that node, Linux placing pages where they are first touched), in hwloc's order. "
        "Only CPUs in the agent's own affinity are dealt; with more local ranks than cores or nodes "
        "they share them round robin. A rank a launcher already bound keeps that binding "
        "(docs/launching.md, \"Binding ranks to CPUs\"). Each rank's metadata `binding` shows the "
        "CPUs it got"),
    with_default(
        row<&RunSettings::timeout_s, codec::Duration<false>>(
            "timeout", "timeout_s", "duration > 0",
            "wall-clock limit of one execution (all its phases: start-up, rendezvous, communicator "
            "creation, every case, finalisation); past it the run fails, naming the rank and phase. "
            "Unset: 10 minutes plus, per case, (warm-up + iterations + 1) × (10 ms + the bytes a rank "
            "moves at a pessimistic 50 MB/s) plus twice `min_time` — so a 1 GiB sweep is not cut "
            "short by a limit meant for kilobytes"),
        "sized per execution"),
    row<&RunSettings::root, codec::IntAtLeast<0>>(
        "root", "root", "integer ≥ 0",
        "root rank of broadcast, reduce, gather, scatter; must be < every world size"),
    // Each message in flight holds a request on both sides: 2^31 of them ran a rank out of memory
    // with a bare std::bad_alloc. OSU's default is 64; 65,536 is far beyond any link's need.
    row<&RunSettings::window, codec::IntBetween<1, 65536>>(
        "window", "window", "integer from 1 to 65536",
        "unidir_bw, bidir_bw, msg_rate: messages in flight before the receiver acknowledges"),
    row<&RunSettings::peers, codec::Peers>(
        "peers", "peers", "array of 2 distinct integers ≥ 0",
        "pingpong, unidir_bw and bidir_bw: the two ranks; each < every world size"),
    with_default(
        row<&RunSettings::device, codec::OptionalIntAtLeast<0>>(
            "device", "device", "integer ≥ 0",
            "`memory = \"cuda\"`: the GPU (index among the visible ones) every rank of the run "
            "uses; unset, the binding rule of docs/gpu.md applies (local rank; device 0 when the "
            "launcher pinned one device per rank with `CUDA_VISIBLE_DEVICES`)"),
        "by local rank"),
    row<&RunSettings::oversubscribe_gpu, codec::Bool>(
        "oversubscribe_gpu", "oversubscribe_gpu", "boolean",
        "`memory = \"cuda\"`: let several local ranks share one GPU (local rank r on device r mod "
        "the visible count). A correctness mode, never a performance number: NCCL refuses two ranks "
        "on one GPU, so each rank is made to look like its own host and the ranks talk over sockets; "
        "every record of such a run carries `oversubscribe_gpu: true`. Off (the default), ranks that would share a "
        "GPU are reported `unavailable` with the reason before any communicator is created"),
    row<&RunSettings::method, codec::Named<MeasureMethod, codec::MethodNames>>(
        "method", "method", "string",
        "the timing method (docs/metrics.md, \"Methods\"; `timing` is its former name, still read with a "
        "warning — in records `timing` is the clock): `batch` — one synchronisation, then the "
        "iterations back to back, per rank elapsed / N (nccl-tests', OSU's and PARAM's method); "
        "`per_iteration` — a synchronised start before every iteration, slowest rank per iteration "
        "(the latency of an isolated collective); `graph` — `memory = \"cuda\"` on a stream-ordered "
        "backend whose posts can be captured (NCCL): the iterations captured into one CUDA graph and "
        "launched once (nccl-tests `-G`); collectives only, other cases are `unsupported` with the "
        "reason"),
    row<&RunSettings::rank_aggregation, codec::Named<RankAggregation, codec::AggregationNames>>(
        "rank_aggregation", "rank_aggregation", "string",
        "`batch` and `graph`: how the ranks' times become one — `avg` (mean over ranks of "
        "elapsed / N, nccl-tests' default), `min`, `max` (the rank with the smallest / largest), "
        "`rank0` (nccl-tests `-a 0/1/2/3`). Point-to-point patterns report their first peer's "
        "clock, as OSU (writing this key on a run of only such patterns is a warning). "
        "`per_iteration` always takes the slowest rank of each iteration (writing this key with "
        "it is a warning)"),
    with_default(row<&RunSettings::target_cv, codec::Fraction>(
                     "target_cv", "target_cv", "number in [0, 1)",
                     "repeat a case in rounds of `iterations` until the coefficient of variation of "
                     "its samples is below this fraction (`0.05` = 5 %), capped by `max_iterations` "
                     "and `max_time`; records say `target_cv` and `cv_reached`, the summary counts "
                     "the misses"),
                 "`0` (off)"),
    with_default(row<&RunSettings::max_time_s, codec::Duration<false>>(
                     "max_time", "max_time_s", "duration > 0",
                     "with `target_cv`: no new round after a case has been measured this long"),
                 "`\"10s\"`"),
    row<&RunSettings::gpu_timing, codec::GpuClock>(
        "gpu_timing", "gpu_timing", "string",
        "the **clock** of a stream-ordered backend (NCCL) on `memory = \"cuda\"`: `cuda_event` "
        "(events on the worker's stream), `host_stream_sync` (host timer, a stream synchronisation "
        "ending each iteration). Host-memory and staged backends are timed on the host whatever "
        "this says. The method is `method`: the former `gpu_timing = \"cuda_event_batch\"` is an "
        "error that says to write `method = \"batch\"` (the default) with `gpu_timing = "
        "\"cuda_event\"`. docs/gpu.md"),
    row<&RunSettings::scaling, codec::Named<ScalingMode, codec::ScalingNames>>(
        "scaling", "scaling", "string",
        "how `sizes` scale with `world_sizes`: `weak` (each rank's message is the size written, at "
        "every world size) or `strong` (the size written is the job's total — what nccl-tests "
        "prints for allgather, reducescatter, alltoall, gather and scatter, and for `sendrecv` the "
        "N messages of the ring together — divided among the ranks). With `workload = \"data_parallel\"`: `weak` keeps `batch_size` per rank, `strong` "
        "makes it the global batch split among the ranks (docs/workloads.md). Either way, a run with "
        "several world sizes gets a scaling-efficiency table (docs/metrics.md)"),
    row<&RunSettings::trace, codec::Bool>(
        "trace", "trace", "boolean",
        "each rank records a Chrome trace (phases, every timed iteration, every `all_pairs` "
        "transfer), written after each case to `trace/exec<N>-rank<R>.json` and merged at the end "
        "into `trace.json` on rank 0's timeline; nothing is recorded when off. docs/observability.md"),
    row<&RunSettings::expect, codec::Expect>(
        "expect", "expect", "table or array of tables",
        "performance the run must reach, checked after the job: see [Expectations](#expectations)"),
    row<&RunSettings::optimizer, codec::Named<workload::Optimizer, codec::OptimizerNames>>(
        "optimizer", "optimizer", "string",
        "the optimizer whose state the memory figures count (docs/workloads.md, \"Memory\"): `sgd` "
        "(none), `momentum` (one fp32 value per parameter), `adam` (two); a 16-bit `dtype` adds the "
        "fp32 master weights, so 16-bit `adam` is ZeRO's 16 bytes per parameter"),
    row<&RunSettings::telemetry_s, codec::TelemetryInterval>(
        "telemetry", "telemetry_s", "boolean or duration ≥ 10ms",
        "the agent samples CPU frequency, temperatures, RAPL power, load, NIC counters and (NVML) GPU "
        "temperature/power/clocks/throttle reasons/utilisation every interval (`true` = every `1s`) "
        "into `telemetry.csv`, and each case record gets a `telemetry` summary. Sampled by the agent, "
        "never inside the timed workers. [observability.md](observability.md#telemetry)"),
    row<&RunSettings::thermal_warmup, codec::OptionalTable<ThermalWarmup, read_thermal_warmup>>(
        "thermal_warmup", "thermal_warmup", "duration, or `{ temperature_c = 50, timeout = \"10min\", idle = \"30s\" }`",
        "before an execution, load the devices (every CPU, and with `memory = \"cuda\"` every GPU) "
        "for the duration, or until they reach `temperature_c` (GPUs through NVML, else the CPU "
        "through hwmon) or `timeout` passes (default 10 min); repeated after an idle gap longer than "
        "`idle` (duration form) or whenever the devices cooled below the target. Recorded in "
        "`summary.json`. [observability.md](observability.md#thermal-warm-up)"),
    row<&RunSettings::profiler, codec::OptionalTable<ProfilerSetting, read_profiler>>(
        "profiler", "profiler", "string or table",
        "wrap workers in a profiler: `\"perf\"`, `\"nsys\"`, `\"ncu\"`, or a command template "
        "(`\"strace -f -o {output}.strace\"`); table form `{ tool = \"nsys\", ranks = [0] }` or "
        "`{ command = \"...\", ranks = [...] }` to wrap only some ranks (all by default). Outputs "
        "land next to the rank's log; a missing program is a validation error. "
        "[observability.md](observability.md#profilers)"),
    row<&RunSettings::workload, codec::Named<WorkloadKind, codec::WorkloadNames>>(
        "workload", "workload", "string",
        "`\"data_parallel\"`: instead of op cases, play data-parallel training steps of `model` "
        "(gradient buckets or FSDP collectives, with compute that really runs) and record step "
        "time, compute, communication, exposed communication, overlap efficiency and samples/s; "
        "`ops` and `sizes` are then not used. `\"memory\"`: no steps; per batch size (`batch_sizes`) "
        "the model's parameters, gradients, optimizer state and activations are allocated for real "
        "in `memory`, touched and measured (host RSS; `cudaMemGetInfo` on a GPU) next to the "
        "computed figures, one `memory` record each. [workloads.md](workloads.md)"),
    row<&RunSettings::model, codec::ModelCodec>(
        "model", "model", "string or table",
        "the workload's model: a preset (`resnet50`, `bert_large`, `gpt2_xl`), `{ layers = [ { name "
        "= \"fc1\", parameters = 1048576, activations = 4096, flops = 2.1e6 }, ... ] }` (forward "
        "order; activations in elements and forward FLOPs per sample), or `{ parameters = N, layers "
        "= L }` split evenly. Required with `workload`"),
    row<&RunSettings::batch_size, codec::IntAtLeast<1>>("batch_size", "batch_size", "integer ≥ 1",
                                                 "workload: samples per rank per step; with `scaling = \"strong\"` "
                                                 "the global batch, split evenly among the ranks (each world size "
                                                 "must divide it)"),
    with_default(row<&RunSettings::batch_sizes, codec::BatchSizeList>(
                     "batch_sizes", "batch_sizes", "array of integers ≥ 1",
                     "`workload = \"memory\"`: the batch sizes per rank to measure, one `memory` record "
                     "each ([workloads.md](workloads.md#memory))"),
                 "`[batch_size]` (recorded as `[]`)"),
    row<&RunSettings::bucket_bytes, codec::ByteSize>(
        "bucket_size", "bucket_bytes", "size",
        "workload, `sharding = \"ddp\"`: gradient bucket cap; layers fill buckets in reverse "
        "order (torch DDP's `bucket_cap_mb`), each bucket one allreduce in `dtype`"),
    row<&RunSettings::sharding, codec::Named<Sharding, codec::ShardingNames>>(
        "sharding", "sharding", "string",
        "workload: `ddp` (gradients allreduced in buckets) or `fsdp` (per layer: allgather of the "
        "parameters before its forward and its backward, reducescatter of its gradients after "
        "its backward)"),
    row<&RunSettings::overlap, codec::BoolChoices>(
        "overlap", "overlap", "boolean or array of booleans",
        "workload: `true` posts each bucket's reduction as soon as its layers' backward is done, "
        "while backward continues; `false` reduces after the whole backward. One record per value"),
    row<&RunSettings::steps, codec::IntAtLeast<1>>("steps", "steps", "integer ≥ 1",
                                            "workload: timed steps per case (after `warmup` steps)"),
    row<&RunSettings::compute_ms, codec::NonNegativeNumber>(
        "compute_ms", "compute_ms", "number ≥ 0",
        "workload, `compute = \"time\"`: compute per step in milliseconds (forward + backward), "
        "split over the layers by their FLOPs (forward ⅓, backward ⅔); `0`: communication only. "
        "With `scaling = \"strong\"` the compute of the global batch on one rank: each of N ranks "
        "computes `compute_ms / N`"),
    row<&RunSettings::compute, codec::Named<ComputeSource, codec::ComputeNames>>(
        "compute", "compute", "string",
        "workload: `time` (`compute_ms`) or `flops` (each layer's FLOPs × `batch_size`, forward "
        "and 2× for backward, at the rate measured on the rank's device before the steps; the rate "
        "is recorded)"),
};

constexpr std::array<RunKeyDoc, 10> kStructural{{
    {"name", "string", "`\"run<index>\"` (0-based: `run0`, `run1`, …)",
     "unique among the runs; printable characters (no line break or other control character); not allowed "
     "in `[defaults]`"},
    {"backends", "array of strings", "**required**",
     "plugin names, e.g. `[\"gloo\"]`; several backends get the same cases and are compared side "
     "by side. `backend = \"gloo\"` is the same as `backends = [\"gloo\"]`"},
    {"ops", "array of strings", "**required** unless `workload` is set", "see [Ops](#ops). `op = \"allreduce\"` for one"},
    {"sizes", "array of sizes, or `{ min, max, factor }`", "**required** unless the only op is `barrier` or `workload` is set",
     "message sizes per rank, see [Sizes](#sizes)"},
    {"dtypes", "array of strings", "`[\"f32\"]`",
     "element types, see [Dtypes](#dtypes). `dtype = \"f32\"` for one"},
    {"redops", "array of strings", "`[\"sum\"]`",
     "reduce ops for reductions: `sum`, `prod`, `min`, `max`, `avg`. `redop = \"sum\"` for one"},
    {"placement", "string or array of strings", "`[\"out_of_place\"]`",
     "`out_of_place` (distinct send and receive buffers) and/or `in_place` (NCCL's in-place layouts). alltoall and "
     "the point-to-point patterns are measured out of place only: with `in_place` alone they would have no case, "
     "an error"},
    {"world_sizes", "array of integers ≥ 1", "`[2]`",
     "ranks to start; each value is a separate execution of the run. `world_size = 4` for one"},
    {"env", "table", "`{}`",
     "environment variables of the worker processes, see [Env and options](#env-and-options)"},
    {"options", "table of tables", "`{}`", "per-backend options, e.g. `[run.options.gloo]`"},
}};

}  // namespace

std::span<const RunSetting> run_settings() { return kSettings; }

const RunSetting* find_run_setting(std::string_view key) {
  for (const RunSetting& s : kSettings)
    if (s.key == key) return &s;
  return nullptr;
}

std::span<const RunKeyDoc> structural_run_keys() { return kStructural; }

void settings_to_json(const RunSettings& s, nlohmann::json& j) {
  for (const RunSetting& row : kSettings) j[std::string(row.json_key)] = row.to_json(s);
}

void settings_from_json(const nlohmann::json& j, RunSettings& s) {
  // null keeps the default: as_parsed writes an unset `timeout` as null (sized per execution).
  for (const RunSetting& row : kSettings)
    if (auto it = j.find(row.json_key); it != j.end() && !it->is_null()) row.from_json(*it, s);
}

std::string default_text(const RunSetting& s) {
  return s.default_words.empty() ? s.default_text() : std::string(s.default_words);
}

std::string run_keys_markdown() {
  std::string out = "| key | type | default | meaning |\n|---|---|---|---|\n";
  for (const RunKeyDoc& k : kStructural)
    out += fmt::format("| `{}` | {} | {} | {} |\n", k.key, k.type, k.default_text, k.meaning);
  for (const RunSetting& s : kSettings)
    out += fmt::format("| `{}` | {} | {} | {} |\n", s.key, s.type, default_text(s), s.meaning);
  return out;
}

}  // namespace commbench
