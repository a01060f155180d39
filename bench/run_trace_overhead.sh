#!/usr/bin/env bash
# What `trace = true` costs (issue 13 §1): the same Gloo allreduce experiment with trace off and
# on, alternating rounds in one job. Prints per world size and size
#  - the ratio on/off of the reported per-op time (p50 and mean; median over rounds): tracing
#    reads its clock outside the op's own timing, so this should stay at 1.00 within the noise;
#  - the per-op wall-clock cost: (execution time on - off) / timed ops, median over rounds, which
#    includes recording the events in the timed loop and writing them after each case.
#
# Usage: bench/run_trace_overhead.sh [build-dir] [rounds] [iterations]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
rounds=${2:-5}
iters=${3:-20000}
bin=$build/bin/commbench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export COMMBENCH_PLUGIN_PATH=${COMMBENCH_PLUGIN_PATH:-$build/lib/commbench/plugins}

for trace in false true; do
  cat >"$work/$trace.toml" <<TOML
name = "trace-$trace"
[defaults]
backends = ["gloo"]
ops = ["allreduce"]
dtypes = ["f32"]
placement = "in_place"
warmup = 50
iterations = $iters
trace = $trace
[[run]]
name = "w1"
world_sizes = [1]
sizes = ["8B", "64KiB"]
[[run]]
name = "w2"
world_sizes = [2]
sizes = ["8B", "64KiB"]
iterations = $((iters / 10))
TOML
done

for ((r = 0; r < rounds; r++)); do
  # Alternate which goes first, so a trend over the job (thermal, neighbours) hits both.
  order=(false true)
  ((r % 2)) && order=(true false)
  for trace in "${order[@]}"; do
    "$bin" run "$work/$trace.toml" -o "$work/out-$trace-$r" --quiet
  done
done

python3 - "$work" "$rounds" <<'PY'
import glob, json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def load(trace, r):
    (job,) = glob.glob(f"{work}/out-{trace}-{r}/*/")
    cases, elapsed = {}, {}
    for line in open(job + "results.jsonl"):
        j = json.loads(line)
        if j["type"] == "case":
            cases[(j["world_size"], j["bytes"])] = j
        elif j["type"] == "execution":
            elapsed[j["world_size"]] = j["elapsed_s"]
    return cases, elapsed
rows = {}
for r in range(rounds):
    off, eoff = load("false", r)
    on, eon = load("true", r)
    ops = {}
    for k in off:
        ops[k[0]] = ops.get(k[0], 0) + off[k]["iterations"] + off[k]["warmup"] + 1
    for k in off:
        d = rows.setdefault(k, {"p50": [], "mean": [], "ns": []})
        d["p50"].append(on[k]["time_us"]["p50"] / off[k]["time_us"]["p50"])
        d["mean"].append(on[k]["time_us"]["mean"] / off[k]["time_us"]["mean"])
        d["ns"].append((eon[k[0]] - eoff[k[0]]) / ops[k[0]] * 1e9)
print(f"{'world':>5} {'bytes':>8} {'p50 on/off':>11} {'(range)':>15} {'mean on/off':>12} {'wall ns/op':>11} {'(range)':>17}")
for (w, b), d in sorted(rows.items()):
    print(f"{w:>5} {b:>8} {statistics.median(d['p50']):>11.3f} ({min(d['p50']):.2f}-{max(d['p50']):.2f})"
          f" {statistics.median(d['mean']):>12.3f} {statistics.median(d['ns']):>11.0f}"
          f" ({min(d['ns']):.0f} to {max(d['ns']):.0f})")
print("wall ns/op: per execution (both sizes together), so both rows of a world size show the same value")
PY
