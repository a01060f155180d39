#!/usr/bin/env bash
# Where a small message's latency goes, layer by layer (issue 25 §1: UCX p2p against
# ucx_perftest). Four ping-pongs of the same sizes, 2 ranks on this host, in rotating order each
# round:
#   perftest  ucx_perftest tag_lat (UCX's own tool; its p50 is over its last 2,048 iterations)
#   ucp       bench/ucp_pingpong.c: the plainest UCP loop, using UCX as the UCX plugin does
#   plugin    bench/plugin_pingpong.c: the UCX plugin through commbench's C ABI (`complete`),
#             no commbench core
#   commbench a whole commbench job: pingpong, method batch (agents, workers, core, plugin)
# Prints each one's p50 half round trip (median over rounds) and the median per-round ratio of
# each layer to the one below it, with min..max: what UCX's tool does differently from a plain
# loop, what the plugin adds to UCX, and what the core adds to the plugin.
#
# Needs ucx_perftest (ucx-utils), mpicc/mpirun (openmpi-bin, libopenmpi-dev: bootstrap of the two
# C programs only, outside their timed loops) and libucx-dev; x86-64 (the C programs read the TSC).
# Usage: [SIZES="8 64 4096"] [ITERS=10000] bench/run_p2p_layers.sh [build-dir] [rounds]
# The order rotates each round, so rounds that are a multiple of 4 give each layer each place
# in the order equally often (default 8).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
rounds=${2:-8}
bin=$build/bin/commbench
plugin=$build/lib/commbench/plugins/libcommbench_backend_ucx.so
for tool in ucx_perftest mpicc mpirun; do
  command -v "$tool" >/dev/null || {
    echo "run_p2p_layers.sh: $tool not found (apt-get install ucx-utils openmpi-bin libopenmpi-dev)" >&2
    exit 2
  }
done
[ -x "$bin" ] && [ -f "$plugin" ] || { echo "$bin or $plugin not found: build first (scripts/build.sh)" >&2; exit 2; }
read -r -a sizes <<<"${SIZES:-8 64 4096}"
for s in "${sizes[@]}"; do
  [[ "$s" =~ ^[1-9][0-9]*$ ]] || { echo "run_p2p_layers.sh: SIZES: '$s' is not a byte count" >&2; exit 2; }
done
iters=${ITERS:-10000}
[[ "$iters" =~ ^[1-9][0-9]*$ ]] || { echo "run_p2p_layers.sh: ITERS=$iters: expected a positive integer" >&2; exit 2; }
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "run_p2p_layers.sh: rounds '$rounds': expected a positive integer" >&2; exit 2; }
work=$(mktemp -d)
source "$root/bench/ucx_perftest_pair.sh"
trap 'ucx_perftest_cleanup; rm -rf "$work"' EXIT
mpicc -O2 -I"$root/bench" -o "$work/ucp_pingpong" "$root/bench/ucp_pingpong.c" -lucp -lucs
mpicc -O2 -I"$root/bench" -I"$root/core/include" -o "$work/plugin_pingpong" "$root/bench/plugin_pingpong.c" -ldl
# Unbound, as the other layers run; --oversubscribe so that a 1-CPU host still runs 2 ranks.
mpi=(timeout 120 mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader -np 2)

cat >"$work/pingpong.toml" <<TOML
name = "p2p-layers"
[[run]]
name = "lat"
backend = "ucx"
world_size = 2
ops = ["pingpong"]
sizes = [$(IFS=,; echo "${sizes[*]}")]
dtype = "uint8"
check = false
warmup = 1000
iterations = $iters
TOML

run_layer() {  # layer round -> "layer round bytes p50_us" lines
  local layer=$1 round=$2 s v
  case $layer in
    perftest)
      for s in "${sizes[@]}"; do
        v=$(ucx_perftest_final tag_lat "$s" "$iters" 1000 | awk '{print $3}') ||
          { echo "run_p2p_layers.sh: the ucx_perftest reference failed" >&2; exit 1; }
        echo "perftest $round $s $v"
      done ;;
    ucp | plugin)
      for s in "${sizes[@]}"; do
        local cmd=("$work/ucp_pingpong" "$s" "$iters")
        [ "$layer" = plugin ] && cmd=("$work/plugin_pingpong" "$plugin" "$s" "$iters")
        if ! v=$("${mpi[@]}" "${cmd[@]}" 2>"$work/$layer.err" | awk '/^p50_us/ {print $2}') || [ -z "$v" ]; then
          echo "run_p2p_layers.sh: the $layer ping-pong of $s bytes failed:" >&2
          tail -5 "$work/$layer.err" >&2
          exit 1
        fi
        echo "$layer $round $s $v"
      done ;;
    commbench)
      rm -rf "$work/out"
      "$bin" run "$work/pingpong.toml" -o "$work/out" --quiet >/dev/null ||
        { echo "run_p2p_layers.sh: the commbench job failed (exit $?)" >&2; exit 1; }
      python3 - "$work/out" "$round" "${sizes[@]}" <<'PY'
import glob, json, sys
found = {}
for path in glob.glob(sys.argv[1] + "/*/results.jsonl"):
    for line in open(path):
        j = json.loads(line)
        if j.get("type") == "case" and j["status"] == "ok":
            found[j["bytes"]] = j["time_us"]["p50"]
missing = [s for s in sys.argv[3:] if int(s) not in found]
if missing:
    sys.exit("run_p2p_layers.sh: the commbench job has no ok case for %s bytes" % ", ".join(missing))
for size, p50 in sorted(found.items()):
    print("commbench %s %d %r" % (sys.argv[2], size, p50))
PY
      ;;
  esac
}

layers=(perftest ucp plugin commbench)
for ((round = 0; round < rounds; round++)); do
  echo "round $((round + 1))/$rounds" >&2
  for ((k = 0; k < ${#layers[@]}; k++)); do
    run_layer "${layers[$(((round + k) % ${#layers[@]}))]}" "$round"
  done
done >"$work/samples.txt"

python3 - "$work/samples.txt" "$rounds" <<'PY'
import statistics, sys
from collections import defaultdict
v = defaultdict(dict)
for line in open(sys.argv[1]):
    layer, rnd, size, us = line.split()
    v[(layer, int(size))][int(rnd)] = float(us)
print("p50 half round trip (us), median over rounds; ratios: median of per-round ratios (min..max)")
print(f"{'bytes':>7} {'perftest':>9} {'ucp':>7} {'plugin':>7} {'commbench':>10}   "
      f"{'ucp/perftest':>19} {'plugin/ucp':>19} {'commbench/plugin':>19} {'commbench/perftest':>19}")
def ratio(a, b, size):
    rs = sorted(set(v[(a, size)]) & set(v[(b, size)]))
    q = [v[(a, size)][r] / v[(b, size)][r] for r in rs]
    return f"{statistics.median(q):.3f} ({min(q):.2f}..{max(q):.2f})"
for size in sorted({s for _, s in v}):
    med = {l: statistics.median(v[(l, size)].values()) for l in ("perftest", "ucp", "plugin", "commbench")}
    print(f"{size:>7} {med['perftest']:>9.3f} {med['ucp']:>7.3f} {med['plugin']:>7.3f} {med['commbench']:>10.3f}   "
          f"{ratio('ucp','perftest',size):>19} {ratio('plugin','ucp',size):>19} "
          f"{ratio('commbench','plugin',size):>19} {ratio('commbench','perftest',size):>19}")
print(f"{sys.argv[2]} rounds, order rotating each round")
PY
