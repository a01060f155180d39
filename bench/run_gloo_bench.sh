#!/usr/bin/env bash
# commbench's Gloo allreduce (timing = "batch", the default) vs a plain back-to-back libgloo loop
# (bench/gloo_direct.cpp: one barrier, N allreduces in a for loop, elapsed / N per rank, averaged
# over ranks), same sizes, same process layout, both placements, alternating rounds in one job.
# Prints, per world size, placement and size, each side's time (median over rounds) and the
# median of the per-round ratios commbench / direct with their min..max.
# Target (issue 12 §4): batch median <= 1.02x the direct loop where the noise allows to see it.
#
# Usage: [ITERS_SMALL=n] [ITERS_LARGE=n] [WORLDS="2 4"] [PLACEMENTS="in out"]
#        bench/run_gloo_bench.sh [build-dir] [rounds]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
rounds=${2:-3}
bin=$build/bin/commbench
direct=$build/bench/gloo_direct
# Small messages take ~0.5-10 ms here with long tails (loopback in a VM, ranks > cores), so they
# need many iterations for a stable mean; large ones need few.
small_sizes=(1024 4096 16384 65536 262144 1048576)
large_sizes=(4194304 16777216 67108864)
small_iters=${ITERS_SMALL:-300}
large_iters=${ITERS_LARGE:-20}
read -r -a worlds <<<"${WORLDS:-2 4}"
read -r -a placements <<<"${PLACEMENTS:-in out}"
warmup=5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
csv=$work/samples.csv
echo "side,world,placement,bytes,round,time_us" >"$csv"

join_by_comma() { local IFS=,; echo "$*"; }

run_direct_group() {  # world placement round tag iters sizes...
  local world=$1 placement=$2 round=$3 tag=$4 iters=$5
  shift 5
  local store=$work/store-$world-$placement-$round-$tag pids=() r
  mkdir -p "$store"
  for ((r = 0; r < world; r++)); do
    "$direct" --rank "$r" --world "$world" --store "$store" --sizes "$(join_by_comma "$@")" \
      --warmup "$warmup" --iters "$iters" --placement "$placement" \
      >"$work/direct-$world-$placement-$round-$tag-$r.out" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    j = json.loads(line)
    print("direct,%s,%s,%d,%s,%r" % (sys.argv[2], sys.argv[3], j["bytes"], sys.argv[4], j["avg_us"]))
' "$work/direct-$world-$placement-$round-$tag-0.out" "$world" "$placement" "$round" >>"$csv"
}

run_direct() {  # world placement round
  run_direct_group "$1" "$2" "$3" small "$small_iters" "${small_sizes[@]}"
  run_direct_group "$1" "$2" "$3" large "$large_iters" "${large_sizes[@]}"
}

run_commbench() {  # world placement round
  local world=$1 placement=$2 round=$3 exp=$work/bench-$1-$2.toml
  local place=out_of_place
  [ "$placement" = in ] && place=in_place
  cat >"$exp" <<TOML
name = "gloo-bench"
[defaults]
backends = ["gloo"]
ops = ["allreduce"]
dtypes = ["f32"]
redops = ["sum"]
placement = "$place"
world_size = $world
warmup = $warmup
check = false
timing = "batch"
[[run]]
name = "small"
sizes = [$(join_by_comma "${small_sizes[@]}")]
iterations = $small_iters
[[run]]
name = "large"
sizes = [$(join_by_comma "${large_sizes[@]}")]
iterations = $large_iters
TOML
  "$bin" run "$exp" -o "$work/out-$world-$placement-$round" --quiet >/dev/null
  python3 -c '
import json, sys, glob
f = glob.glob(sys.argv[1] + "/*/results.jsonl")[0]
for line in open(f):
    j = json.loads(line)
    if j.get("type") == "case":
        assert j["method"] == "batch" and j["rank_aggregation"] == "avg", j
        print("commbench,%s,%s,%d,%s,%r" % (sys.argv[2], sys.argv[3], j["bytes"], sys.argv[4], j["time_us"]["mean"]))
' "$work/out-$world-$placement-$round" "$world" "$placement" "$round" >>"$csv"
}

for ((round = 1; round <= rounds; round++)); do
  for world in "${worlds[@]}"; do
    for placement in "${placements[@]}"; do
      # Alternate which side goes first so drift (thermal, other load) hits both alike.
      if ((round % 2)); then run_direct "$world" "$placement" "$round"; run_commbench "$world" "$placement" "$round"
      else run_commbench "$world" "$placement" "$round"; run_direct "$world" "$placement" "$round"; fi
    done
  done
done

python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
t = {}
for r in rows:
    t[(r["side"], int(r["world"]), r["placement"], int(r["bytes"]), int(r["round"]))] = float(r["time_us"])
keys = sorted({(w, p, b) for (_, w, p, b, _) in t})
rounds = sorted({k[4] for k in t})
# Each round runs both sides back to back, so the per-round ratio is a paired comparison: drift
# between rounds cancels. The median of those ratios is the headline; min..max shows the noise.
print("%5s %5s %10s %14s %17s %7s %15s" % ("world", "place", "bytes", "direct us", "commbench us",
                                           "ratio", "round ratios"))
for (world, placement, size) in keys:
    d = [t[("direct", world, placement, size, r)] for r in rounds]
    c = [t[("commbench", world, placement, size, r)] for r in rounds]
    ratios = [ci / di for ci, di in zip(c, d)]
    ratio = statistics.median(ratios)
    flag = "" if ratio <= 1.02 else "  > 1.02"
    print("%5d %5s %10d %14.2f %17.2f %7.3f %7.2f..%-6.2f%s" % (
        world, placement, size, statistics.median(d), statistics.median(c), ratio, min(ratios),
        max(ratios), flag))
print("times: per op, mean over the batch (elapsed / N per rank, averaged over ranks); %d rounds" % len(rounds))
PY
