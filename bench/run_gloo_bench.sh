#!/usr/bin/env bash
# commbench's Gloo allreduce vs a minimal direct libgloo loop (bench/gloo_direct.cpp), same
# sizes, same process layout, alternating rounds in one job. Prints, per world size and size,
# each side's median iteration time (median over rounds) and the median of the per-round ratios.
# Target (issue 2): commbench median <= 1.02x the direct loop.
#
# Usage: [ITERS_SMALL=n] [ITERS_LARGE=n] bench/run_gloo_bench.sh [build-dir] [rounds]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
rounds=${2:-3}
bin=$build/bin/commbench
direct=$build/bench/gloo_direct
# Small messages take ~0.5-10 ms here with long tails (loopback in a VM, ranks > cores), so they
# need many iterations for a stable median; large ones need few.
small_sizes=(1024 4096 16384 65536 262144 1048576)
large_sizes=(4194304 16777216 67108864)
small_iters=${ITERS_SMALL:-300}
large_iters=${ITERS_LARGE:-20}
worlds=(2 4)
warmup=5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
csv=$work/samples.csv
echo "side,world,bytes,round,median_us" >"$csv"

join_by_comma() { local IFS=,; echo "$*"; }

run_direct_group() {  # world round tag iters sizes...
  local world=$1 round=$2 tag=$3 iters=$4
  shift 4
  local store=$work/store-$world-$round-$tag pids=() r
  mkdir -p "$store"
  for ((r = 0; r < world; r++)); do
    "$direct" --rank "$r" --world "$world" --store "$store" --sizes "$(join_by_comma "$@")" \
      --warmup "$warmup" --iters "$iters" >"$work/direct-$world-$round-$tag-$r.out" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    j = json.loads(line)
    print("direct,%s,%d,%s,%r" % (sys.argv[2], j["bytes"], sys.argv[3], j["median_us"]))
' "$work/direct-$world-$round-$tag-0.out" "$world" "$round" >>"$csv"
}

run_direct() {  # world round
  run_direct_group "$1" "$2" small "$small_iters" "${small_sizes[@]}"
  run_direct_group "$1" "$2" large "$large_iters" "${large_sizes[@]}"
}

run_commbench() {  # world round
  local world=$1 round=$2 exp=$work/bench-$1.toml
  cat >"$exp" <<TOML
name = "gloo-bench"
[defaults]
backends = ["gloo"]
ops = ["allreduce"]
dtypes = ["f32"]
redops = ["sum"]
world_size = $world
warmup = $warmup
check = false
[[run]]
name = "small"
sizes = [$(join_by_comma "${small_sizes[@]}")]
iterations = $small_iters
[[run]]
name = "large"
sizes = [$(join_by_comma "${large_sizes[@]}")]
iterations = $large_iters
TOML
  "$bin" run "$exp" -o "$work/out-$world-$round" --quiet >/dev/null
  python3 -c '
import json, sys, glob
f = glob.glob(sys.argv[1] + "/*/results.jsonl")[0]
for line in open(f):
    j = json.loads(line)
    if j.get("type") == "case":
        print("commbench,%s,%d,%s,%r" % (sys.argv[2], j["bytes"], sys.argv[3], j["time_us"]["p50"]))
' "$work/out-$world-$round" "$world" "$round" >>"$csv"
}

for ((round = 1; round <= rounds; round++)); do
  for world in "${worlds[@]}"; do
    # Alternate which side goes first so drift (thermal, other load) hits both alike.
    if ((round % 2)); then run_direct "$world" "$round"; run_commbench "$world" "$round"
    else run_commbench "$world" "$round"; run_direct "$world" "$round"; fi
  done
done

python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
med = {}
for r in rows:
    med[(r["side"], int(r["world"]), int(r["bytes"]), int(r["round"]))] = float(r["median_us"])
keys = sorted({(w, b) for (_, w, b, _) in med})
rounds = sorted({k[3] for k in med})
# Each round runs both sides back to back, so the per-round ratio is a paired comparison: drift
# between rounds cancels. The median of those ratios is the headline; min..max shows the noise.
print("%5s %10s %14s %17s %7s %15s" % ("world", "bytes", "direct p50 us", "commbench p50 us",
                                        "ratio", "round ratios"))
worst = 0.0
for (world, size) in keys:
    d = [med[("direct", world, size, r)] for r in rounds]
    c = [med[("commbench", world, size, r)] for r in rounds]
    ratios = [ci / di for ci, di in zip(c, d)]
    ratio = statistics.median(ratios)
    worst = max(worst, ratio)
    flag = "" if ratio <= 1.02 else "  > 1.02 target"
    print("%5d %10d %14.2f %17.2f %7.3f %7.2f..%-6.2f%s" % (
        world, size, statistics.median(d), statistics.median(c), ratio, min(ratios),
        max(ratios), flag))
print("worst median ratio %.3f (target <= 1.02) over %d rounds" % (worst, len(rounds)))
PY
