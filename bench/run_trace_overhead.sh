#!/usr/bin/env bash
# What `trace = true` costs (issue 13 §1):
#  1. bench/trace_cost (built with the project): the recorder's own per-op cost in the timed loop
#     and per event written after the case, against the same loop off; no backend noise.
#  2. The same Gloo allreduce experiment with trace off and on, alternating rounds: the ratio
#     on/off of the reported per-op time (p50 and mean; median and range over rounds). Tracing
#     reads its clock outside the op's own timing, so this should stay at 1.00 within the noise.
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

if [ -x "$build/bench/trace_cost" ]; then
  "$build/bench/trace_cost" 200000 11
fi

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
iterations = $((iters / 4))
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
    off, _ = load("false", r)
    on, _ = load("true", r)
    for k in off:
        d = rows.setdefault(k, {"p50": [], "mean": [], "off": []})
        d["off"].append(off[k]["time_us"]["p50"])
        d["p50"].append(on[k]["time_us"]["p50"] / off[k]["time_us"]["p50"])
        d["mean"].append(on[k]["time_us"]["mean"] / off[k]["time_us"]["mean"])
print(f"{'world':>5} {'bytes':>8} {'p50 off (us)':>12} {'p50 on/off':>11} {'(range)':>13} {'mean on/off':>12} {'(range)':>13}")
for (w, b), d in sorted(rows.items()):
    base = statistics.median(d["off"])
    print(f"{w:>5} {b:>8} {base:>12.2f} {statistics.median(d['p50']):>11.3f} ({min(d['p50']):.2f}-{max(d['p50']):.2f})"
          f" {statistics.median(d['mean']):>12.3f} ({min(d['mean']):.2f}-{max(d['mean']):.2f})")
PY
