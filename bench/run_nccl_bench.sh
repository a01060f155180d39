#!/usr/bin/env bash
# commbench's nccl plugin vs a plain NCCL loop (bench/nccl_direct.cpp) — and vs nccl-tests'
# all_reduce_perf when NCCL_TESTS_DIR points at a build — same sizes, same timing method, same
# process layout (one process per rank and GPU), alternating rounds in one job. Prints per size
# each side's time (median over rounds) and the median of the per-round ratios, and writes the
# same table as Markdown to $REPORT when set. Target (issue 11): <= 1.02x at every size.
#
# Usage: [WORLD=n] [MODE=batch|events] [MIN=8] [MAX=1073741824] [ITERS=20] [REPORT=file.md]
#        bench/run_nccl_bench.sh [build-dir] [rounds]
# MODE batch = CUDA events around ITERS back-to-back ops (commbench timing "batch", gpu_timing "cuda_event");
# MODE events = an event pair per op, median (commbench timing "per_iteration", gpu_timing "cuda_event");
# MODE graph = ITERS ops in one CUDA graph (commbench timing "graph"). nccl-tests is host-timed
# around its batch (its default), so compare it with MODE batch.
# On the simulated GPU (tests/simgpu) this runs too, as a check of the script itself; its times
# are CPU emulation and mean nothing about a GPU.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
rounds=${2:-3}
bin=$build/bin/commbench
direct=$build/bench/nccl_direct
[ -x "$direct" ] || { echo "run_nccl_bench: $direct not built (CUDA toolkit and NCCL needed)" >&2; exit 2; }
world=${WORLD:-1}
mode=${MODE:-batch}
iters=${ITERS:-20}
warmup=5
min=${MIN:-8}
max=${MAX:-1073741824}
case $mode in
  batch) cb_method=batch; direct_mode=batch ;;
  events) cb_method=per_iteration; direct_mode=events ;;
  graph) cb_method=graph; direct_mode=graph ;;
  *) echo "run_nccl_bench: MODE is batch, events or graph" >&2; exit 2 ;;
esac
sizes=()
for ((s = min; s <= max; s *= 4)); do sizes+=("$s"); done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
csv=$work/samples.csv
echo "side,bytes,round,us" >"$csv"
join_by_comma() { local IFS=,; echo "$*"; }

run_direct() {  # round
  local store=$work/store-direct-$1 pids=() r
  mkdir -p "$store"
  for ((r = 0; r < world; r++)); do
    "$direct" --rank "$r" --world "$world" --store "$store" --sizes "$(join_by_comma "${sizes[@]}")" \
      --warmup "$warmup" --iters "$iters" --mode "$direct_mode" >"$work/direct-$1-$r.out" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    j = json.loads(line)
    print("direct,%d,%s,%r" % (j["bytes"], sys.argv[2], j["avg_us"]))
' "$work/direct-$1-0.out" "$1" >>"$csv"
}

run_commbench() {  # round
  local exp=$work/bench.toml
  cat >"$exp" <<TOML
name = "nccl-bench"
[[run]]
backends = ["nccl"]
memory = "cuda"
timing = "$cb_method"
gpu_timing = "cuda_event"
ops = ["allreduce"]
dtypes = ["f32"]
redops = ["sum"]
placement = "out_of_place"
world_size = $world
warmup = $warmup
iterations = $iters
check = false
sizes = [$(join_by_comma "${sizes[@]}")]
TOML
  "$bin" run "$exp" -o "$work/out-$1" --quiet >/dev/null
  python3 -c '
import json, sys, glob
f = glob.glob(sys.argv[1] + "/*/results.jsonl")[0]
for line in open(f):
    j = json.loads(line)
    if j.get("type") == "case" and j.get("status", "ok") == "ok":
        print("commbench,%d,%s,%r" % (j["bytes"], sys.argv[2], j["time_us"]["mean"]))
' "$work/out-$1" "$1" >>"$csv"
}

run_nccl_tests() {  # round
  [ -n "${NCCL_TESTS_DIR:-}" ] || return 0
  local perf=$NCCL_TESTS_DIR/build/all_reduce_perf
  [ -x "$perf" ] || perf=$NCCL_TESTS_DIR/all_reduce_perf
  [ -x "$perf" ] || { echo "run_nccl_bench: no all_reduce_perf under NCCL_TESTS_DIR=$NCCL_TESTS_DIR" >&2; return 0; }
  # One process with `world` GPUs (-g), nccl-tests' own default timing; -c 0: no check in the loop.
  "$perf" -b "$min" -e "$max" -f 4 -g "$world" -w "$warmup" -n "$iters" -c 0 >"$work/nccltests-$1.out"
  python3 -c '
import sys
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) > 6 and f[0].isdigit():
        print("nccl-tests,%s,%s,%s" % (f[0], sys.argv[2], f[5]))  # size, out-of-place time (us)
' "$work/nccltests-$1.out" "$1" >>"$csv"
}

for ((round = 1; round <= rounds; round++)); do
  # Alternate which side goes first so drift (clocks, other load) hits both alike.
  if ((round % 2)); then run_direct "$round"; run_commbench "$round"; run_nccl_tests "$round"
  else run_nccl_tests "$round"; run_commbench "$round"; run_direct "$round"; fi
done

python3 - "$csv" "$world" "$mode" "${REPORT:-}" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
world, mode, report = sys.argv[2], sys.argv[3], sys.argv[4]
t = {}
for r in rows:
    t.setdefault((r["side"], int(r["bytes"])), {})[int(r["round"])] = float(r["us"])
sizes = sorted({b for (s, b) in t if s == "commbench"})
have_tests = any(s == "nccl-tests" for (s, _) in t)
def ratio(ref, b):
    c, d = t.get(("commbench", b), {}), t.get((ref, b), {})
    rs = [c[k] / d[k] for k in c if k in d and d[k] > 0]
    return (statistics.median(rs), min(rs), max(rs)) if rs else None
head = "| bytes | direct us | commbench us | ratio (min..max) |" + (" nccl-tests us | ratio |" if have_tests else "")
lines = ["nccl allreduce, world %s, timing %s (target <= 1.02x)" % (world, mode), "", head,
         "|" + "---|" * (head.count("|") - 1)]
worst = 0.0
for b in sizes:
    r = ratio("direct", b)
    if r is None:
        continue
    worst = max(worst, r[0])
    line = "| %d | %.2f | %.2f | %.3f (%.2f..%.2f)%s |" % (
        b, statistics.median(t[("direct", b)].values()), statistics.median(t[("commbench", b)].values()),
        r[0], r[1], r[2], "" if r[0] <= 1.02 else " **> 1.02**")
    if have_tests:
        rt = ratio("nccl-tests", b)
        line += " %s | %s |" % ("%.2f" % statistics.median(t[("nccl-tests", b)].values()) if rt else "-",
                                 "%.3f" % rt[0] if rt else "-")
    lines.append(line)
lines += ["", "worst median ratio vs the direct loop: %.3f" % worst]
print("\n".join(lines))
if report:
    open(report, "a").write("\n".join(lines) + "\n\n")
PY
