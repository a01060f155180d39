#!/usr/bin/env bash
# commbench's UCX (and Gloo) collectives vs Open MPI on this node (issue 25 §2): Open MPI's
# MPI_Allreduce, MPI_Allgather and MPI_Reduce_scatter_block (bench/mpi_direct.c, f32 sum) and
# commbench's UCX allreduce/allgather/reducescatter and Gloo allreduce (method = "batch", the same
# clock: one barrier, N back-to-back ops, elapsed / N per rank, averaged over ranks), same sizes
# (bytes per rank, as commbench counts them), same process count, both placements, alternating
# rounds in one run. Prints per op, world, placement and size each side's busbw (median over
# rounds, nccl-tests' formulas) and the median of the per-round ratios commbench / Open MPI with
# their min..max. Target: UCX >= 1.0x Open MPI at 2 and 4 ranks, 64 KiB .. 64 MiB.
#
# Open MPI is a bench-only dependency (not in scripts/install-deps.sh's build set):
#   apt-get install openmpi-bin libopenmpi-dev      # mpirun and mpicc
# Open MPI runs with --mca btl self,vader (shared memory), --oversubscribe (more ranks than
# cores: Open MPI then yields the CPU while it polls) and --allow-run-as-root.
#
# Both sides run with glibc keeping the memory it frees (MALLOC_MMAP_MAX_=0, a 64 GiB
# MALLOC_TRIM_THRESHOLD_). By default glibc hands a freed block above its mmap threshold (32 MiB at
# most) back to the kernel, so a library that allocates a temporary buffer per call faults in
# fresh pages on every call: Open MPI 4.1's MPI_Reduce_scatter_block at 2 ranks, 16 MiB ran at
# 0.06 GB/s that way on this project's VM and at 1.1 GB/s with freed memory kept (docs/performance-ucx-mpi.md).
# A reference must not pay a cost its users would tune away. The variables are exported for the
# whole script (mpicc and python3 get them too, harmlessly). KEEP_FREED_MEMORY=0 sets nothing and
# leaves the environment as the caller has it.
#
# Both sides bind their ranks the same way: BIND (default core) is given to mpirun as --map-by and
# --bind-to and to commbench as the run setting cpu_binding. Open MPI binds to a core by default at up to two
# ranks and commbench binds nothing by default, so without this the two would differ in where
# their ranks run (on this project's VM one vCPU copies memory at half the other's speed at times).
# Gloo (GLOO=1) runs its I/O on a thread of its own, which a rank bound to one core must share:
# with BIND=core its numbers here say what a bound Gloo does, not what it does unbound
# (docs/launching.md, "Binding ranks to CPUs").
#
# Usage: [OPS="allreduce allgather reducescatter"] [WORLDS="2 4"] [PLACEMENTS="in out"]
#        [SIZES="65536 ... 67108864"] [ITERS_SMALL=n] [ITERS_LARGE=n] [WARMUP=n] [GLOO=0|1]
#        [UCX_PROGRESS=polling|wait|yield]  (the UCX backend's `progress` option; default auto)
#        [UCX_OPTIONS="key=value ..."]  (more UCX backend options, e.g. allreduce_algorithm=ring
#                                        small_message_threshold=256KiB; docs/backends/ucx.md)
#        [KEEP_FREED_MEMORY=1|0] [BIND=core|numa|none]
#        bench/run_mpi_bench.sh [build-dir] [rounds]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
rounds=${2:-3}
bin=$build/bin/commbench
for tool in mpicc mpirun; do
  command -v "$tool" >/dev/null || {
    echo "run_mpi_bench.sh: $tool not found: Open MPI is this benchmark's reference;" \
      "install it with: apt-get install openmpi-bin libopenmpi-dev" >&2
    exit 2
  }
done
[ -x "$bin" ] || { echo "$bin not found: build first (scripts/build.sh)" >&2; exit 2; }
read -r -a ops <<<"${OPS:-allreduce allgather reducescatter}"
read -r -a worlds <<<"${WORLDS:-2 4}"
read -r -a placements <<<"${PLACEMENTS:-in out}"
read -r -a sizes <<<"${SIZES:-65536 262144 1048576 4194304 16777216 67108864}"
large_from=4194304  # from here on fewer iterations: one op takes milliseconds
small_iters=${ITERS_SMALL:-100}
large_iters=${ITERS_LARGE:-20}
gloo=${GLOO:-1}
warmup=${WARMUP:-5}
keep_freed=${KEEP_FREED_MEMORY:-1}
bind=${BIND:-core}
case $bind in
  core | numa | none) ;;
  *) echo "run_mpi_bench.sh: BIND=$bind: expected core, numa or none" >&2; exit 2 ;;
esac
# More ranks than cores (4 on this 2-vCPU VM): Open MPI refuses to bind unless told that ranks may
# share; commbench deals them round robin, the same placement.
# --map-by places rank r on the r-th core (node) in hwloc's order, as cpu_binding deals them
# (Open MPI's own default maps by socket from three ranks on).
mpi_bind=(--bind-to none)
[ "$bind" = none ] || mpi_bind=(--map-by "$bind" --bind-to "$bind:overload-allowed")
case $keep_freed in
  0 | 1) ;;
  *) echo "run_mpi_bench.sh: KEEP_FREED_MEMORY=$keep_freed: expected 1 (keep freed memory) or 0" >&2; exit 2 ;;
esac
mpi_env=()
if ((keep_freed)); then
  export MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736  # inherited by commbench's ranks
  mpi_env=(-x MALLOC_MMAP_MAX_ -x MALLOC_TRIM_THRESHOLD_)
fi
work=$(mktemp -d)
# On failure the samples and logs stay for a look.
trap 'status=$?; if ((status)); then echo "run_mpi_bench.sh failed (exit $status); logs kept in $work" >&2; else rm -rf "$work"; fi' EXIT
csv=$work/samples.csv
echo "side,op,world,placement,bytes,round,time_us,busbw" >"$csv"

join_by_comma() { local IFS=,; echo "$*"; }

mpicc -O2 -o "$work/mpi_direct" "$root/bench/mpi_direct.c"
small=() large=()
for s in "${sizes[@]}"; do
  if ((s >= large_from)); then large+=("$s"); else small+=("$s"); fi
done

run_mpi() {  # world placement round
  local world=$1 placement=$2 round=$3 out=$work/mpi-$1-$2-$3.jsonl
  mpirun --allow-run-as-root --oversubscribe "${mpi_bind[@]}" --mca btl self,vader ${mpi_env[@]+"${mpi_env[@]}"} -np "$world" "$work/mpi_direct" \
    --ops "$(join_by_comma "${ops[@]}")" --sizes "$(join_by_comma "${sizes[@]}")" --placement "$placement" \
    --warmup "$warmup" --iters-small "$small_iters" --iters-large "$large_iters" --large-from "$large_from" \
    >"$out" 2>"$work/mpi-$1-$2-$3.log" || {
    echo "mpirun failed (exit $?), world $world, placement $placement, round $round:" >&2
    tail -20 "$work/mpi-$1-$2-$3.log" >&2
    exit 1
  }
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    j = json.loads(line)
    print("mpi,%s,%d,%s,%d,%s,%r," % (j["op"], j["world"], j["placement"], j["bytes"], sys.argv[2], j["avg_us"]))
' "$out" "$round" >>"$csv"
}

run_commbench() {  # world placement round
  local world=$1 placement=$2 round=$3 exp=$work/bench-$1-$2.toml
  local place=out_of_place
  [ "$placement" = in ] && place=in_place
  {
    cat <<TOML
name = "mpi-bench"
[defaults]
dtypes = ["f32"]
redops = ["sum"]
placement = "$place"
world_size = $world
warmup = $warmup
check = false
method = "batch"
cpu_binding = "$bind"
TOML
    local backend group list iters
    for backend in ucx gloo; do
      [ "$backend" = gloo ] && [ "$gloo" != 1 ] && continue
      list=$(printf '"%s",' "${ops[@]}")
      [ "$backend" = gloo ] && list='"allreduce",'
      for group in small large; do
        if [ "$group" = small ]; then
          ((${#small[@]})) || continue
          iters=$small_iters
          sizes_list=$(join_by_comma "${small[@]}")
        else
          ((${#large[@]})) || continue
          iters=$large_iters
          sizes_list=$(join_by_comma "${large[@]}")
        fi
        printf '[[run]]\nname = "%s-%s"\nbackends = ["%s"]\nops = [%s]\nsizes = [%s]\niterations = %d\n' \
          "$backend" "$group" "$backend" "${list%,}" "$sizes_list" "$iters"
        if [ "$backend" = ucx ] && [ -n "${UCX_PROGRESS:-}${UCX_OPTIONS:-}" ]; then
          printf '[run.options.ucx]\n'
          [ -n "${UCX_PROGRESS:-}" ] && printf 'progress = "%s"\n' "$UCX_PROGRESS"
          for kv in ${UCX_OPTIONS:-}; do printf '%s = "%s"\n' "${kv%%=*}" "${kv#*=}"; done
        fi
      done
    done
  } >"$exp"
  local log=$work/commbench-$world-$placement-$round.log
  "$bin" run "$exp" -o "$work/out-$world-$placement-$round" --quiet >"$log" 2>&1 || {
    echo "commbench run failed (exit $?), world $world, placement $placement, round $round:" >&2
    tail -30 "$log" >&2
    exit 1
  }
  python3 -c '
import json, sys, glob
f = glob.glob(sys.argv[1] + "/*/results.jsonl")[0]
for line in open(f):
    j = json.loads(line)
    if j.get("type") != "case":
        continue
    if j["status"] != "ok":
        sys.exit("commbench case failed: %s" % line)
    assert j["method"] == "batch" and j["rank_aggregation"] == "avg", j
    print("%s,%s,%d,%s,%d,%s,%r,%r" % (j["backend"], j["op"], j["world_size"], sys.argv[2], j["bytes"], sys.argv[3],
                                      j["time_us"]["mean"], j["busbw_gbps"]))
' "$work/out-$world-$placement-$round" "$placement" "$round" >>"$csv"
}

for ((round = 1; round <= rounds; round++)); do
  echo "round $round/$rounds (load average: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  for world in "${worlds[@]}"; do
    for placement in "${placements[@]}"; do
      # Alternate which side goes first so drift (other load, caches) hits both alike.
      if ((round % 2)); then run_mpi "$world" "$placement" "$round"; run_commbench "$world" "$placement" "$round"
      else run_commbench "$world" "$placement" "$round"; run_mpi "$world" "$placement" "$round"; fi
    done
  done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "glibc keeps freed memory on both sides: $keep_freed (KEEP_FREED_MEMORY); ranks bound to: $bind (BIND)" >&2

python3 - "$csv" <<'PY'
import csv, statistics, sys
t, reported = {}, {}
for r in csv.DictReader(open(sys.argv[1])):
    k = (r["side"], r["op"], int(r["world"]), r["placement"], int(r["bytes"]), int(r["round"]))
    t[k] = float(r["time_us"])
    if r["busbw"]:
        reported[k] = float(r["busbw"])

def busbw(op, world, size, us):  # GB/s, nccl-tests' bus bandwidth; `size` is bytes per rank
    if op == "allreduce":
        return size / us / 1e3 * 2 * (world - 1) / world
    return size * world / us / 1e3 * (world - 1) / world  # allgather, reducescatter: n blocks move

# commbench's own busbw must agree with the formula used for Open MPI, or the ratios compare
# different things.
for k, v in reported.items():
    mine = busbw(k[1], k[2], k[4], t[k])
    if abs(mine - v) > 0.01 * v + 1e-9:
        sys.exit("busbw disagrees with commbench's for %s: %.4f vs %.4f GB/s" % (k, mine, v))

rounds = sorted({k[5] for k in t})
keys = sorted({k[1:5] for k in t if k[0] == "mpi"})
sides = [s for s in ("ucx", "gloo") if any(k[0] == s for k in t)]
print("busbw GB/s, median over rounds; ratio = median of per-round commbench/Open MPI busbw (min..max)")
print("%-13s %5s %5s %9s %8s" % ("op", "world", "place", "bytes", "mpi") +
      "".join(" %8s %6s %12s" % (s, s + "/mpi", "rounds") for s in sides))
for (op, world, placement, size) in keys:
    line = "%-13s %5d %5s %9d" % (op, world, placement, size)
    m = [busbw(op, world, size, t[("mpi", op, world, placement, size, r)]) for r in rounds]
    line += " %8.3f" % statistics.median(m)
    for s in sides:
        if (s, op, world, placement, size, rounds[0]) not in t:
            line += " %8s %6s %12s" % ("-", "-", "")
            continue
        c = [busbw(op, world, size, t[(s, op, world, placement, size, r)]) for r in rounds]
        ratios = [ci / mi for ci, mi in zip(c, m)]
        line += " %8.3f %6.2f %5.2f..%-5.2f" % (statistics.median(c), statistics.median(ratios), min(ratios),
                                                 max(ratios))
        if s == "ucx" and statistics.median(ratios) < 1.0:
            line += " <1"
    print(line)
print("%d rounds; times per op are the batch mean (elapsed / N per rank, averaged over ranks)" % len(rounds))
PY
