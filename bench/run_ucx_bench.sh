#!/usr/bin/env bash
# commbench's UCX backend against ucx_perftest (Debian ucx-utils) on this machine, alternating
# rounds in one job, same transports (UCX_TLS applies to both), 2 ranks:
#   latency    tag_lat 50th percentile  vs commbench pingpong p50      8 B .. 64 KiB  target <= 1.05x
#   bandwidth  tag_bw average MB/s      vs commbench unidir_bw algbw   1 .. 256 MiB   target >= 0.95x
# then commbench UCX allreduce vs Gloo allreduce busbw per size (one job, side by side).
# Prints per size each side's median over rounds and the median of the per-round ratios.
# Both sides read a rendezvous message in one process_vm_readv, commbench's default (option
# single_copy_segment, docs/backends/ucx.md): where UCX has its cma or knem transport and the caller sets
# none of UCX_SCOPY_SEG_SIZE, UCX_CMA_SEG_SIZE and UCX_KNEM_SEG_SIZE (512K is UCX's own default),
# UCX_SCOPY_SEG_SIZE=inf is exported for both, so that the ratios compare the harness, not two
# UCX settings.
#
# Usage: [LAT_ITERS=n] [BW_MESSAGES=n] bench/run_ucx_bench.sh [build-dir] [rounds]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
rounds=${2:-3}
bin=$build/bin/commbench
command -v ucx_perftest >/dev/null || { echo "ucx_perftest not found: apt-get install ucx-utils" >&2; exit 2; }
[ -x "$bin" ] || { echo "$bin not found: build first (scripts/build.sh)" >&2; exit 2; }
# grep reads all of ucx_info's output (with -q it could stop early, and pipefail would then see
# ucx_info die of SIGPIPE). UCX_TLS is not consulted: one excluding cma and knem gets UCX's
# "unused env variable" warning.
if [ -z "${UCX_SCOPY_SEG_SIZE+set}${UCX_CMA_SEG_SIZE+set}${UCX_KNEM_SEG_SIZE+set}" ] &&
  ucx_info -d 2>/dev/null | grep 'Transport: \(cma\|knem\)' >/dev/null; then
  export UCX_SCOPY_SEG_SIZE=inf
fi
lat_sizes=(8 64 512 4096 32768 65536)
bw_sizes=(1048576 4194304 16777216 67108864 268435456)
lat_iters=${LAT_ITERS:-5000}
window=16
bw_msgs=${BW_MESSAGES:-48}  # messages per bandwidth sample set: perftest -n, commbench windows x window
warmup=100
work=$(mktemp -d)
source "$root/bench/ucx_perftest_pair.sh"
trap 'ucx_perftest_cleanup; rm -rf "$work"' EXIT
csv=$work/samples.csv
echo "kind,side,bytes,round,value" >"$csv"

perftest() {  # test size iters extra... ; prints the "Final:" line
  local test=$1 size=$2 iters=$3
  shift 3
  ucx_perftest_final "$test" "$size" "$iters" "$warmup" "$@" || exit 1
}

run_perftest() {  # round
  local s f
  for s in "${lat_sizes[@]}"; do
    f=$(perftest tag_lat "$s" "$lat_iters")
    # Final: iters p50 avg overall bw_avg bw_overall rate_avg rate_overall
    echo "lat,perftest,$s,$1,$(echo "$f" | awk '{print $3}')" >>"$csv"
  done
  for s in "${bw_sizes[@]}"; do
    f=$(perftest tag_bw "$s" "$bw_msgs" -O "$window")
    # MB/s here is 2^20 bytes per second; record decimal GB/s like commbench.
    echo "bw,perftest,$s,$1,$(echo "$f" | awk '{printf "%.6f", $6 * 1048576 / 1e9}')" >>"$csv"
  done
}

run_commbench() {  # round
  local exp=$work/ucx-$1.toml
  cat >"$exp" <<TOML
name = "ucx-bench"
[defaults]
backend = "ucx"
world_size = 2
dtype = "uint8"
check = false
warmup = $warmup
window = $window
[[run]]
name = "lat"
ops = ["pingpong"]
sizes = [$(IFS=,; echo "${lat_sizes[*]}")]
iterations = $lat_iters
[[run]]
name = "bw"
ops = ["unidir_bw"]
sizes = [$(IFS=,; echo "${bw_sizes[*]}")]
warmup = 1
iterations = $((bw_msgs / window))
TOML
  "$bin" run "$exp" -o "$work/out-$1" --quiet >/dev/null
  python3 - "$work/out-$1" "$1" >>"$csv" <<'PY'
import glob, json, sys
for line in open(glob.glob(sys.argv[1] + "/*/results.jsonl")[0]):
    j = json.loads(line)
    if j.get("type") != "case" or j["status"] != "ok":
        continue
    if j["op"] == "pingpong":
        print("lat,commbench,%d,%s,%r" % (j["bytes"], sys.argv[2], j["time_us"]["p50"]))
    else:
        print("bw,commbench,%d,%s,%r" % (j["bytes"], sys.argv[2], j["algbw_gbps"]))
PY
}

for ((round = 0; round < rounds; round++)); do
  echo "round $((round + 1))/$rounds" >&2
  if ((round % 2 == 0)); then run_perftest $round; run_commbench $round
  else run_commbench $round; run_perftest $round; fi
done

python3 - "$csv" <<'PY'
import csv, statistics, sys
from collections import defaultdict
v = defaultdict(dict)
for r in csv.DictReader(open(sys.argv[1])):
    v[(r["kind"], int(r["bytes"]))].setdefault(r["side"], {})[int(r["round"])] = float(r["value"])
def show(kind, title, unit, better):
    print(f"\n{title}")
    print(f"{'bytes':>10} {'perftest '+unit:>16} {'commbench '+unit:>17} {'ratio':>7} {'per-round ratios':>28}  target")
    for (k, b), sides in sorted(v.items()):
        if k != kind or "perftest" not in sides or "commbench" not in sides: continue
        rounds = sorted(set(sides["perftest"]) & set(sides["commbench"]))
        ratios = [sides["commbench"][i] / sides["perftest"][i] for i in rounds if sides["perftest"][i] > 0]
        ratio = statistics.median(ratios)
        ok = ratio <= 1.05 if better == "lower" else ratio >= 0.95
        print(f"{b:>10} {statistics.median(sides['perftest'].values()):>16.3f} "
              f"{statistics.median(sides['commbench'].values()):>17.3f} {ratio:>7.3f} "
              f"{' '.join('%.2f' % r for r in ratios):>28}  {'met' if ok else 'MISSED'}")
show("lat", "Latency, half round trip p50 (us): commbench pingpong / ucx_perftest tag_lat, target <= 1.05", "us", "lower")
show("bw", "Bandwidth (GB/s): commbench unidir_bw / ucx_perftest tag_bw, target >= 0.95", "GB/s", "higher")
PY

# UCX allreduce against Gloo allreduce, same job, same sizes.
cat >"$work/allreduce.toml" <<TOML
name = "ucx-vs-gloo-allreduce"
[[run]]
name = "allreduce"
backends = ["gloo", "ucx"]
world_sizes = [2, 4]
ops = ["allreduce"]
dtype = "f32"
sizes = { min = "4KiB", max = "64MiB", factor = 4 }
warmup = 3
iterations = 20
check = false
TOML
"$bin" run "$work/allreduce.toml" -o "$work/ar" --quiet >/dev/null
python3 - "$work/ar" <<'PY'
import glob, json, sys
from collections import defaultdict
bw = defaultdict(dict)
for line in open(glob.glob(sys.argv[1] + "/*/results.jsonl")[0]):
    j = json.loads(line)
    if j.get("type") == "case" and j["status"] == "ok":
        bw[(j["world_size"], j["bytes"])][j["backend"]] = j["busbw_gbps"]
print("\nAllreduce busbw (GB/s), f32 sum, one job: UCX vs Gloo")
print(f"{'ranks':>5} {'bytes':>10} {'gloo':>9} {'ucx':>9} {'ucx/gloo':>9}")
for (w, b), s in sorted(bw.items()):
    if "gloo" in s and "ucx" in s:
        print(f"{w:>5} {b:>10} {s['gloo']:>9.3f} {s['ucx']:>9.3f} {s['ucx'] / s['gloo']:>9.2f}")
PY
