#!/usr/bin/env bash
# What the UCX backend's `progress` mode costs when a host has more ranks than CPUs, for
# commbench's own numbers and for other work on the host (issue 25 §2: should `auto` pick
# "yield", as Open MPI does when oversubscribed, instead of "wait"?).
#
# Alternating rounds; in each, for mode in wait and yield:
#   quiet   WORLD ranks of allreduce (8 B and 64 KiB, timing = "batch") with nothing else running;
#   loaded  OTHER single-threaded CPU jobs (sha256 of BYTES zeros each) started together, and the
#           same commbench run repeated until they finish;
# and once per round the OTHER jobs alone. Prints, per mode, commbench's mean time per op quiet
# and loaded (median over runs, min..max), and the other jobs' wall time as a multiple of alone.
# Usage: [WORLD=4] [OTHER=2] [BYTES=3000000000] bench/run_ucx_progress_cost.sh [build-dir] [rounds]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
rounds=${2:-3}
world=${WORLD:-4}
other=${OTHER:-2}
bytes=${BYTES:-3000000000}
bin=$build/bin/commbench
[ -x "$bin" ] || { echo "$bin not found: build first (scripts/build.sh)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "$(nproc) CPUs, $world ranks, $other other jobs; load average $(cut -d' ' -f1-3 /proc/loadavg)"

for mode in wait yield; do
  cat >"$work/$mode.toml" <<TOML
name = "progress-cost"
[defaults]
dtypes = ["f32"]
redops = ["sum"]
world_size = $world
warmup = 20
check = false
timing = "batch"
[[run]]
name = "ucx-$mode"
backends = ["ucx"]
ops = ["allreduce"]
sizes = [8, 65536]
iterations = 2000
[run.options.ucx]
progress = "$mode"
TOML
done

now_ms() { echo $(($(date +%s%N) / 1000000)); }
# Starts the other jobs; each appends its wall time in ms to $1.
start_other() {
  local out=$1 i
  : >"$out"
  for ((i = 0; i < other; i++)); do
    (t0=$(now_ms); head -c "$bytes" /dev/zero | sha256sum >/dev/null; echo "$(($(now_ms) - t0))" >>"$out") &
  done
}
run_commbench() {  # mode tag round
  "$bin" run "$work/$1.toml" --output "$work/out-$1-$2-$3" >/dev/null 2>&1 ||
    { echo "commbench run failed ($1, $2, round $3)" >&2; exit 1; }
}

rows=$work/rows
for ((round = 1; round <= rounds; round++)); do
  start_other "$work/alone-$round"
  wait
  while read -r ms; do echo "other alone $ms" >>"$rows"; done <"$work/alone-$round"
  for mode in wait yield; do
    run_commbench "$mode" quiet "$round"
    start_other "$work/other-$mode-$round"
    while (($(wc -l <"$work/other-$mode-$round") < other)); do run_commbench "$mode" loaded "$round"; done
    wait
    while read -r ms; do echo "other $mode $ms" >>"$rows"; done <"$work/other-$mode-$round"
  done
done
for csv in "$work"/out-*/*/results.csv; do
  tag=$(basename "$(dirname "$(dirname "$csv")")")  # out-<mode>-<quiet|loaded>-<round>
  read -r _ mode load _ <<<"${tag//-/ }"
  awk -F, -v m="$mode" -v l="$load" '$5 == "allreduce" { print "commbench " m " " l " " $6 " " $18 }' "$csv" >>"$rows"
done

python3 - "$rows" <<'PY'
import collections, statistics, sys
other = collections.defaultdict(list)
times = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] == "other":
        other[f[1]].append(float(f[2]))
    else:
        times[(f[1], f[2], int(f[3]))].append(float(f[4]))
alone = statistics.median(other["alone"])
print(f"\nother jobs alone: {alone / 1000:.2f} s (median)")
print(f"{'mode':>6} {'size':>7} {'quiet us':>18} {'loaded us':>18} {'other jobs x alone':>20}")
for mode in ("wait", "yield"):
    o = [t / alone for t in other[mode]]
    for size in sorted({k[2] for k in times if k[0] == mode}):
        cell = []
        for load in ("quiet", "loaded"):
            v = times[(mode, load, size)]
            cell.append(f"{statistics.median(v):.0f} ({min(v):.0f}..{max(v):.0f})" if v else "-")
        print(f"{mode:>6} {size:>7} {cell[0]:>18} {cell[1]:>18} "
              f"{statistics.median(o):>8.2f} ({min(o):.2f}..{max(o):.2f})")
PY
