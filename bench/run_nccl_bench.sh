#!/usr/bin/env bash
# commbench's nccl plugin vs a plain NCCL loop (bench/nccl_direct.cpp) — and vs nccl-tests'
# all_reduce_perf when NCCL_TESTS_DIR points at a build — same sizes, same process layout (one
# process per rank and GPU), the same quantity on both sides, alternating rounds in one job.
# Prints per size each side's time per op (median over rounds), the median of the per-round
# ratios with their range, and the host cost per op of both sides (batch); writes the same table
# as Markdown to $REPORT when set. Target (issue 26): <= 1.02x wherever the GPU, not the host,
# sets the pace (GPU time per op above both sides' host cost per op).
#
# Usage: [WORLD=n] [MODE=batch|per_iteration|graph] [MIN=8] [MAX=1073741824] [ITERS=20] [REPORT=file.md]
#        [COMMBENCH=path/to/commbench] [NCCL_DIRECT=path/to/nccl_direct] [NCCL_TESTS_DIR=dir]
#        bench/run_nccl_bench.sh [build-dir] [rounds]
# What each MODE compares (means on both sides, ranks averaged as nccl-tests does):
#   batch          commbench timing "batch" (events after each of N back-to-back ops) vs
#                  nccl_direct --mode batch (an event pair around the same N ops), and nccl-tests'
#                  default (the host clock around N back-to-back ops and a stream sync);
#   per_iteration  commbench "per_iteration" vs nccl_direct --mode per_iteration (the ranks lined
#                  up before every op, an event pair around it);
#   graph          commbench "graph" vs nccl_direct --mode graph (N ops in one CUDA graph between
#                  two event record nodes).
# On the simulated GPU (tests/simgpu) this runs too, as a check of the script itself; its times
# are CPU emulation and mean nothing about a GPU.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
rounds=${2:-3}
bin=${COMMBENCH:-$build/bin/commbench}
direct=${NCCL_DIRECT:-$build/bench/nccl_direct}
[ -x "$direct" ] || { echo "run_nccl_bench: $direct not built (CUDA toolkit and NCCL needed)" >&2; exit 2; }
world=${WORLD:-1}
mode=${MODE:-batch}
iters=${ITERS:-20}
warmup=5
min=${MIN:-8}
max=${MAX:-1073741824}
case $mode in
  batch|per_iteration|graph) ;;
  *) echo "run_nccl_bench: MODE is batch, per_iteration or graph" >&2; exit 2 ;;
esac
sizes=()
for ((s = min; s <= max; s *= 4)); do sizes+=("$s"); done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
csv=$work/samples.csv
echo "side,bytes,round,us,host_us" >"$csv"
join_by_comma() { local IFS=,; echo "$*"; }

run_direct() {  # round
  local store=$work/store-direct-$1 pids=() r
  mkdir -p "$store"
  for ((r = 0; r < world; r++)); do
    "$direct" --rank "$r" --world "$world" --store "$store" --sizes "$(join_by_comma "${sizes[@]}")" \
      --warmup "$warmup" --iters "$iters" --mode "$mode" >"$work/direct-$1-$r.out" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    if not line.startswith("{"):
        continue  # NCCL lines: with NCCL_DEBUG=WARN it prints its version to stdout
    j = json.loads(line)
    print("direct,%d,%s,%r,%r" % (j["bytes"], sys.argv[2], j["avg_us"], j.get("host_us", 0)))
' "$work/direct-$1-0.out" "$1" >>"$csv"
}

run_commbench() {  # round
  local exp=$work/bench.toml
  cat >"$exp" <<TOML
name = "nccl-bench"
[[run]]
backends = ["nccl"]
memory = "cuda"
method = "$mode"
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
  "$bin" run "$exp" -o "$work/out-$1" --quiet >"$work/commbench-$1.log" 2>&1 ||
    { echo "run_nccl_bench: commbench failed (round $1):" >&2; tail -20 "$work/commbench-$1.log" >&2; return 1; }
  python3 -c '
import json, sys, glob
f = glob.glob(sys.argv[1] + "/*/results.jsonl")[0]
for line in open(f):
    j = json.loads(line)
    if j.get("type") == "case" and j.get("status", "ok") == "ok":
        print("commbench,%d,%s,%r,%r" % (j["bytes"], sys.argv[2], j["time_us"]["mean"], j.get("host_us_per_op", 0)))
' "$work/out-$1" "$1" >>"$csv"
}

run_nccl_tests() {  # round
  [ -n "${NCCL_TESTS_DIR:-}" ] && [ "$mode" = batch ] || return 0
  local perf=$NCCL_TESTS_DIR/build/all_reduce_perf
  [ -x "$perf" ] || perf=$NCCL_TESTS_DIR/all_reduce_perf
  [ -x "$perf" ] || { echo "run_nccl_bench: no all_reduce_perf under NCCL_TESTS_DIR=$NCCL_TESTS_DIR" >&2; return 0; }
  # One process with `world` GPUs (-g), nccl-tests' own default timing (host clock around the
  # batch); -c 0: no check in the loop.
  "$perf" -b "$min" -e "$max" -f 4 -g "$world" -w "$warmup" -n "$iters" -c 0 >"$work/nccltests-$1.out" 2>&1 || {
    echo "run_nccl_bench: all_reduce_perf failed (round $1):" >&2; tail -5 "$work/nccltests-$1.out" >&2; return 0; }
  python3 -c '
import sys
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) > 6 and f[0].isdigit():
        print("nccl-tests,%s,%s,%s,0" % (f[0], sys.argv[2], f[5]))  # size, out-of-place time (us)
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
t, host = {}, {}
for r in rows:
    t.setdefault((r["side"], int(r["bytes"])), {})[int(r["round"])] = float(r["us"])
    host.setdefault((r["side"], int(r["bytes"])), []).append(float(r["host_us"]))
sizes = sorted({b for (s, b) in t if s == "commbench"})
have_tests = any(s == "nccl-tests" for (s, _) in t)
def ratio(ref, b):
    c, d = t.get(("commbench", b), {}), t.get((ref, b), {})
    rs = [c[k] / d[k] for k in c if k in d and d[k] > 0]
    return (statistics.median(rs), min(rs), max(rs)) if rs else None
def med(side, b):
    v = t.get((side, b), {})
    return statistics.median(v.values()) if v else None
def host_med(side, b):
    v = [x for x in host.get((side, b), []) if x > 0]
    return statistics.median(v) if v else None
show_host = mode == "batch"
head = "| bytes | direct us | commbench us | ratio (min..max) |"
head += " host us/op direct | host us/op commbench | GPU-bound |" if show_host else " GPU-bound |"
if have_tests: head += " nccl-tests us | ratio |"
lines = ["nccl allreduce, world %s, timing %s, mean per op (target <= 1.02x where the GPU sets the pace)" % (world, mode),
         "", head, "|" + "---|" * (head.count("|") - 1)]
worst_gpu_bound, host_costs = 0.0, []
# Which sizes the GPU's work sets the pace of. batch: the GPU's time per op is above both sides'
# host cost per op (measured). per_iteration and graph: one op (or one graph) per launch, so a
# fixed latency (the launch of an op on an idle GPU, ~5-7 us on an H200) is inside every sample:
# a size counts once its time is at least twice the smallest size's, where that floor stops
# dominating.
floor = min((med("direct", b) for b in sizes if med("direct", b)), default=0)
for b in sizes:
    r = ratio("direct", b)
    if r is None:
        continue
    d_us, c_us = med("direct", b), med("commbench", b)
    hd, hc = host_med("direct", b), host_med("commbench", b)
    if show_host:
        gpu_bound = hd is not None and hc is not None and d_us > max(hd, hc)
    else:
        gpu_bound = floor > 0 and d_us >= 2 * floor
    if gpu_bound:
        worst_gpu_bound = max(worst_gpu_bound, r[0])
    if hc is not None and hd is not None:
        host_costs.append((b, hd, hc))
    flag = "" if r[0] <= 1.02 or not gpu_bound else " **> 1.02**"
    line = "| %d | %.2f | %.2f | %.3f (%.2f..%.2f)%s |" % (b, d_us, c_us, r[0], r[1], r[2], flag)
    if show_host:
        line += " %s | %s | %s |" % ("%.2f" % hd if hd is not None else "-", "%.2f" % hc if hc is not None else "-",
                                     "yes" if gpu_bound else "no (host-bound)")
    else:
        line += " %s |" % ("yes" if gpu_bound else "no (latency-bound)")
    if have_tests:
        rt = ratio("nccl-tests", b)
        line += " %s | %s |" % ("%.2f" % med("nccl-tests", b) if rt else "-", "%.3f" % rt[0] if rt else "-")
    lines.append(line)
lines += ["", "worst median ratio vs the direct loop where the GPU sets the pace: %.3f" % worst_gpu_bound]
if host_costs:
    small = [x for x in host_costs if x[0] <= 65536] or host_costs
    lines.append("host cost per op (sizes <= 64 KiB, median): direct %.2f us, commbench %.2f us" % (
        statistics.median(x[1] for x in small), statistics.median(x[2] for x in small)))
if have_tests:
    lines.append("nccl-tests is timed on the host around its batch (its default), commbench with CUDA events: "
                 "at small sizes the launch of the first op and the final synchronisation differ by a few us per batch.")
print("\n".join(lines))
if report:
    open(report, "a").write("\n".join(lines) + "\n\n")
PY
