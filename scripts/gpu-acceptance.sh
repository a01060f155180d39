#!/usr/bin/env bash
# The GPU acceptance run (docs/gpu.md): what a person with one GPU machine for a few minutes runs to
# see whether commbench's GPU half works there and whether its numbers are NCCL's. No apt, no
# build, no network: it runs the binaries of an unpacked release tarball (installed as
# bin/commbench-gpu-acceptance) or of a build tree (as scripts/gpu-acceptance.sh).
#
#   commbench-gpu-acceptance OUT_DIR [--nccl-tests DIR] [--budget SECONDS] [--max-bytes N]
#                            [--rounds N] [--lib-dir DIR]... [--skip STEP]... [--work DIR]
#
# It finds libcudart.so.13, libcublas.so.13, libnvidia-ml.so.1 and libnccl.so.2 (--lib-dir first,
# then LD_LIBRARY_PATH, the Python environments' nvidia/*/lib wheel folders, the loader's cache and
# the usual folders), says where, and runs these steps in order of value, each with its own time
# limit, appending to OUT_DIR/report.md and refreshing OUT_DIR/results.tar.gz after each (a run
# cut short still leaves what it had):
#   env        device, driver, library versions
#   smoke      nccl and ncclx on device memory, checked
#   tests      the GPU tests against the real libraries (a run where none executed is a failure;
#              tests that need more GPUs than the host has are listed by name as not run)
#   conformance  commbench conformance nccl and ncclx at 1 rank
#   large      checked runs at 256 MiB and 1 GiB
#   methods    timing batch, per_iteration, graph with cuda_event
#   direct     commbench vs bench/nccl_direct (and nccl-tests with --nccl-tests), 8 B .. max-bytes
#   d2d        1 GiB allreduce at 1 rank vs a device-to-device copy
#   workload   the cuBLAS data-parallel workload at 1 rank
#   shared     two ranks on the one GPU (oversubscribe_gpu = true: correctness only): collectives,
#              graph, per_iteration, a non-blocking communicator, point-to-point patterns,
#              all_pairs, registered buffers and fp8 avg; and the same world without it reported
#              unavailable with the reason
# Exit status: 0 every step passed; 1 a step failed or a target was missed; 2 bad usage;
# 3 no GPU (nothing measured).
set -uo pipefail

usage() { sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
out="" nccl_tests="" budget=${BUDGET:-480} max_bytes=1073741824 rounds=3 lib_dirs=() skip=() work_dir=""
while [ $# -gt 0 ]; do
  case $1 in
    --nccl-tests) nccl_tests=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --max-bytes) max_bytes=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --lib-dir) lib_dirs+=("$2"); shift 2 ;;
    --skip) skip+=("$2"); shift 2 ;;
    --work) work_dir=$2; shift 2 ;;
    -h|--help) usage ;;
    -*) echo "gpu-acceptance: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) [ -z "$out" ] || { echo "gpu-acceptance: one OUT_DIR only" >&2; exit 2; }; out=$1; shift ;;
  esac
done
[ -n "$out" ] || { echo "gpu-acceptance: give the folder for the report and results: gpu-acceptance OUT_DIR" >&2; exit 2; }
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
began=$(date +%s)

# ---- where the binaries are: an unpacked release (bin/commbench beside this script) or a build
here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
if [ -x "$here/commbench" ]; then
  prefix=$(cd "$here/.." && pwd)
  bin=$prefix/bin/commbench
  tests_bin=$prefix/libexec/commbench/commbench_gpu_tests
  direct=$prefix/libexec/commbench/nccl_direct
  bench=$prefix/share/commbench/bench/run_nccl_bench.sh
  layout="release $prefix"
else
  src=$(cd "$here/.." && pwd)
  build=${BUILD_DIR:-$src/build}
  bin=$build/bin/commbench
  tests_bin=$build/tests/gpu/commbench_gpu_tests
  direct=$build/bench/nccl_direct
  bench=$src/bench/run_nccl_bench.sh
  layout="build tree $build"
fi
[ -x "$bin" ] || { echo "gpu-acceptance: no commbench at $bin" >&2; exit 2; }

# OUT_DIR gets two files, report.md and results.tar.gz (every results folder and log); the
# working files live in a temporary folder (or --work DIR, kept).
if [ -n "$work_dir" ]; then work=$work_dir; else work=$(mktemp -d "${TMPDIR:-/tmp}/commbench-acceptance.XXXXXX"); trap 'rm -rf "$work"' EXIT; fi
rm -rf "$work/results" "$work/logs" "$out/report.md" "$out/results.tar.gz"
mkdir -p "$work/results" "$work/logs"
report=$out/report.md
status=0
not_run=()

remaining() { echo $((budget - ($(date +%s) - began))); }
skipped() { local s; for s in "${skip[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
section() { printf '\n## %s\n\n' "$1" >>"$report"; }
say() { printf '%s\n' "$*" >>"$report"; }
snapshot() {  # the results so far, whatever happens next
  tar -C "$work" -czf "$out/results.tar.gz.tmp" results logs 2>/dev/null && mv "$out/results.tar.gz.tmp" "$out/results.tar.gz"
}
# run_step NAME LIMIT CMD...: the command under its own time limit (never past the budget); its
# output in logs/NAME.log. Returns its status (124: timed out).
run_step() {
  local name=$1 limit=$2; shift 2
  local left; left=$(remaining)
  [ "$left" -lt "$limit" ] && limit=$left
  local t0; t0=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" >"$work/logs/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc after $(( $(date +%s) - t0 )) s (limit $limit s)" >>"$work/logs/steps.txt"
  [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && say "**timed out after $limit s** (log: logs/$name.log)"
  return "$rc"
}
# want STEP MIN_SECONDS: whether to run it (not skipped, enough budget left); else says why.
want() {
  if skipped "$1"; then section "$1"; say "not run (--skip $1)"; not_run+=("$1"); return 1; fi
  if [ "$(remaining)" -lt "$2" ]; then
    section "$1"; say "**not run: the time budget (${budget} s) is spent** ($(remaining) s left, $2 s needed)"
    not_run+=("$1"); status=1; return 1
  fi
  return 0
}
fail() { status=1; say "**FAILED**: $*"; }

# ---- the GPU libraries
py_site_dirs() {  # site-packages folders of the Python environments around
  {
    [ -n "${VIRTUAL_ENV:-}" ] && ls -d "$VIRTUAL_ENV"/lib/python3*/site-packages 2>/dev/null
    ls -d /opt/*/.venv/lib/python3*/site-packages /opt/*/lib/python3*/site-packages /usr/local/lib/python3*/dist-packages \
      /usr/lib/python3/dist-packages 2>/dev/null
    for py in python3 python; do
      command -v "$py" >/dev/null 2>&1 && "$py" -c 'import sys; print("\n".join(p for p in sys.path if p))' 2>/dev/null
    done
  } | awk '!seen[$0]++' | while IFS= read -r d; do [ -d "$d/nvidia" ] && echo "$d"; done
}
mapfile -t site_dirs < <(py_site_dirs)
find_lib() {  # SONAME -> the path it is loaded from here, or nothing
  local so=$1 d
  for d in "${lib_dirs[@]}"; do [ -e "$d/$so" ] && { echo "$d/$so"; return; }; done
  IFS=: read -ra ld <<<"${LD_LIBRARY_PATH:-}"
  for d in "${ld[@]}"; do [ -n "$d" ] && [ -e "$d/$so" ] && { echo "$d/$so"; return; }; done
  for d in "${site_dirs[@]}"; do
    for f in "$d"/nvidia/*/lib/"$so"; do [ -e "$f" ] && { echo "$f"; return; }; done
  done
  local cached; cached=$(ldconfig -p 2>/dev/null | awk -v so="$so" '$1 == so && /x86-64/ && !found {print $NF; found = 1}')
  [ -n "$cached" ] && { echo "$cached"; return; }
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib /usr/local/nvidia/lib64 \
           /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib/wsl/lib; do
    [ -e "$d/$so" ] && { echo "$d/$so"; return; }
  done
}
declare -A found
path_dirs=()
for so in libcudart.so.13 libnccl.so.2 libcublas.so.13 libnvidia-ml.so.1 libcuda.so.1; do
  found[$so]=$(find_lib "$so")
  if [ -n "${found[$so]}" ]; then
    d=$(dirname "${found[$so]}")
    case " ${path_dirs[*]} " in *" $d "*) ;; *) path_dirs+=("$d") ;; esac
  fi
done
LD_LIBRARY_PATH=$(IFS=:; echo "${path_dirs[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
export COMMBENCH_NCCLX_LIBRARY=${COMMBENCH_NCCLX_LIBRARY:-${found[libnccl.so.2]}}
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}  # NCCL's own warnings in the workers' logs
py=$(command -v python3 || command -v python || true)

# Versions through the libraries themselves (ctypes; no toolkit headers needed).
versions=$("${py:-python3}" - "${found[libcudart.so.13]}" "${found[libnccl.so.2]}" 2>&1 <<'PY'
import ctypes, sys
out = {}
try:
    rt = ctypes.CDLL(sys.argv[1] or "libcudart.so.13")
    v = ctypes.c_int(0)
    if rt.cudaRuntimeGetVersion(ctypes.byref(v)) == 0: out["cuda_runtime"] = v.value
    if rt.cudaDriverGetVersion(ctypes.byref(v)) == 0: out["cuda_driver_api"] = v.value
    n = ctypes.c_int(0)
    err = rt.cudaGetDeviceCount(ctypes.byref(n))
    out["devices"] = n.value if err == 0 else 0
    if err != 0:
        rt.cudaGetErrorString.restype = ctypes.c_char_p
        out["device_error"] = "cudaGetDeviceCount: %s (%d)" % (rt.cudaGetErrorString(err).decode(), err)
    names, prop = [], ctypes.create_string_buffer(8192)
    for d in range(out["devices"]):
        rt.cudaGetDeviceProperties(prop, d)
        names.append(prop.raw[:256].split(b"\0")[0].decode(errors="replace"))
    out["names"] = "; ".join(names)
except OSError as e:
    out["devices"], out["device_error"] = 0, "no CUDA runtime: %s" % e
try:
    nc = ctypes.CDLL(sys.argv[2] or "libnccl.so.2")
    v = ctypes.c_int(0)
    if nc.ncclGetVersion(ctypes.byref(v)) == 0:
        c = v.value
        out["nccl"] = "%d.%d.%d" % (c // 10000, c % 10000 // 100, c % 100) if c >= 10000 else "%d.%d.%d" % (c // 1000, c % 1000 // 100, c % 100)
        out["nccl_code"] = c
except OSError as e:
    out["nccl_error"] = str(e)
for k, v in out.items():
    print("%s=%s" % (k, v))
PY
)
kv() { sed -n "s/^$1=//p" <<<"$versions" | head -1; }
ngpus=$(kv devices); ngpus=${ngpus:-0}
names=$(kv names)
driver=$(command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)

{
  echo "# commbench GPU acceptance — $(hostname), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  echo "- commbench: $("$bin" --version 2>/dev/null | head -1) ($layout)"
  echo "- GPUs ($ngpus): ${names:-none}$( [ -n "$(kv device_error)" ] && echo " — $(kv device_error)")"
  echo "- driver: ${driver:-unknown (no nvidia-smi)}; CUDA driver API $(kv cuda_driver_api), runtime $(kv cuda_runtime)"
  echo "- NCCL: $(kv nccl)${found[libnccl.so.2]:+ from ${found[libnccl.so.2]}}$( [ -n "$(kv nccl_error)" ] && echo " — $(kv nccl_error)")"
  echo "- time budget ${budget} s; max bytes $max_bytes; rounds $rounds"
  echo
  echo "| library | found at |"
  echo "|---|---|"
  for so in libcudart.so.13 libnccl.so.2 libcublas.so.13 libnvidia-ml.so.1 libcuda.so.1; do
    echo "| $so | ${found[$so]:-**not found**}$( [ -n "${found[$so]}" ] && [ "$(readlink -f "${found[$so]}")" != "${found[$so]}" ] && echo " → $(basename "$(readlink -f "${found[$so]}")")") |"
  done
  echo
  echo "Python environments with nvidia wheels: ${site_dirs[*]:-none}"
} >"$report"
case $names in
  *simulated*) say ""; say "> **Simulated device (tests/simgpu): this run checks the script and the software, its times are CPU emulation, not GPU results.**" ;;
esac
echo "$versions" >"$work/logs/versions.txt"
env | grep -E '^(LD_LIBRARY_PATH|CUDA_VISIBLE_DEVICES|NCCL_|COMMBENCH_)' >"$work/logs/environment.txt"
nvidia-smi >"$work/logs/nvidia-smi.txt" 2>&1 || true
snapshot
if [ "$ngpus" -lt 1 ]; then
  say ""; say "**No GPU visible: nothing was measured.** This script measures real hardware; CI proves the GPU code on the simulated device (ctest -L gpu_sim)."
  echo "gpu-acceptance: no GPU visible ($(kv device_error)); report in $report" >&2
  exit 3
fi
nccl_code=$(kv nccl_code)
if [ -z "${found[libnccl.so.2]}" ]; then
  say ""; say "**libnccl.so.2 not found**: install NCCL >= 2.19 (e.g. pip install nvidia-nccl-cu13) or pass --lib-dir."
  status=1
elif [ -n "$nccl_code" ] && [ "$nccl_code" -lt 21900 ]; then
  say ""; say "**NCCL $(kv nccl) is too old**: the nccl plugin needs NCCL >= 2.19 (it was built against 2.28; 2.28's alltoall, gather and scatter are used where present)."
  status=1
fi

toml() {  # NAME BODY: an experiment file in the work folder
  printf '%s\n' "$2" >"$work/$1.toml"
  echo "$work/$1.toml"
}
run_exp() {  # STEP LIMIT FILE [extra args]: commbench run into results/STEP
  local name=$1 limit=$2 file=$3; shift 3
  run_step "$name" "$limit" "$bin" run "$file" -o "$work/results/$name" "$@"
}
records() {  # STEP: a summary of the case records (status, op, bytes, time, busbw, wrong)
  "${py:-python3}" - "$work/results/$1" <<'PY'
import glob, json, sys
recs = []
for f in sorted(glob.glob(sys.argv[1] + "/*/results.jsonl")):
    for line in open(f):
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if j.get("type") == "case":
            recs.append(j)
bad = [r for r in recs if r.get("status") != "ok"]
print("%d case(s), %d not ok" % (len(recs), len(bad)))
for r in recs[:40]:
    t = r.get("time_us", {}).get("mean")
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (r.get("backend"), r.get("op"), r.get("bytes"),
          r.get("placement", ""), r.get("method"), "%.2f" % t if t else "-", "%.2f" % r.get("algbw_gbps", 0),
          "%.2f" % r.get("busbw_gbps", 0), r.get("wrong"),
          r.get("status") + (": " + r.get("reason", "")[:160] if r.get("status") != "ok" else "")))
PY
}
records_table() {  # STEP
  local summary; summary=$(records "$1")
  say "$(head -1 <<<"$summary")"; say ""
  say "| backend | op | bytes | placement | method | time us | algbw GB/s | busbw GB/s | wrong | status |"
  say "|---|---|---|---|---|---|---|---|---|---|"
  tail -n +2 <<<"$summary" >>"$report"
  head -1 <<<"$summary" | grep -q ', 0 not ok' || fail "cases not ok in $1 (above)"
}
sizes_up_to() {  # MAX FACTOR: 8 .. MAX, TOML list
  local s=8 list=""
  while [ "$s" -le "$1" ]; do list="$list${list:+, }$s"; s=$((s * $2)); done
  echo "[$list]"
}
cap() { [ "$1" -le "$max_bytes" ] && echo "$1" || echo "$max_bytes"; }

# ---- smoke: nccl and ncclx on device memory, checked
if want smoke 30; then
  section "Smoke: nccl and ncclx on device memory (checked)"
  f=$(toml smoke "name = \"smoke\"
[[run]]
backends = [\"nccl\", \"ncclx\"]
memory = \"cuda\"
ops = [\"allreduce\", \"allgather\", \"reducescatter\", \"broadcast\", \"alltoall\"]
sizes = $(sizes_up_to "$(cap 67108864)" 64)
world_size = 1
warmup = 2
iterations = 5
check = true
[run.options.ncclx]
library = \"${found[libnccl.so.2]}\"")
  run_exp smoke 90 "$f" || fail "commbench run (exit $?; logs/smoke.log)"
  records_table smoke
  snapshot
fi

# ---- the GPU tests against the real libraries
if want tests 40; then
  section "GPU tests against the real CUDA and NCCL (commbench_gpu_tests, real mode)"
  if [ ! -x "$tests_bin" ]; then
    fail "the GPU test binary is missing ($tests_bin)"
  else
    # Conformance runs as its own step below; here everything else.
    COMMBENCH_GPU_TESTS=real COMMBENCH_TEST_BIN=$bin run_step tests 150 "$tests_bin" \
      --gtest_filter='-ConformanceOnGpu.Nccl*' --gtest_output="json:$work/results/gpu-tests.json"
    rc=$?
    "${py:-python3}" - "$work/results/gpu-tests.json" "$work/logs/tests.log" >"$work/tests-summary.txt" <<'PY'
import json, re, sys
try:
    j = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    print("ran=0"); print("note=no test report (%s)" % e); sys.exit()
# Why each test skipped: gtest's JSON has no message, its output does ("<file>:<line>: Skipped" then the text).
why, current, lines = {}, None, []
for line in open(sys.argv[2], errors="replace"):
    m = re.match(r"\[ RUN      \] (\S+)", line)
    if m:
        current, lines = m.group(1), []
        continue
    if current and line.startswith("[  SKIPPED ] " + current):
        text = [l.strip() for l in lines if l.strip() and not re.search(r": Skipped$", l.strip())]
        why[current] = " ".join(text)[:200]
        current = None
        continue
    if current:
        lines.append(line)
ran = passed = failed = 0
skipped, failures, need_more = [], [], []
for suite in j.get("testsuites", []):
    for t in suite.get("testsuite", []):
        name = "%s.%s" % (suite["name"], t["name"])
        if t.get("result") == "SKIPPED" or t.get("status") == "NOTRUN":
            msg = why.get(name, "")
            (need_more if re.search(r"needs \d+ GPU", msg) else skipped).append((name, msg))
            continue
        ran += 1
        if t.get("failures"):
            failed += 1
            failures.append((name, t["failures"][0].get("failure", "").splitlines()[0][:300]))
        else:
            passed += 1
print("ran=%d" % ran); print("passed=%d" % passed); print("failed=%d" % failed)
for n, m in failures: print("failure=%s: %s" % (n, m))
for n, m in need_more: print("needmore=%s (%s)" % (n, m))
for n, m in skipped: print("skip=%s (%s)" % (n, m))
PY
    ran=$(sed -n 's/^ran=//p' "$work/tests-summary.txt"); passed=$(sed -n 's/^passed=//p' "$work/tests-summary.txt")
    failed=$(sed -n 's/^failed=//p' "$work/tests-summary.txt")
    say "executed ${ran:-0}: ${passed:-0} passed, ${failed:-0} failed (gtest exit $rc)"
    if [ "${ran:-0}" -eq 0 ]; then fail "no GPU test executed: a run in which nothing ran on the GPU proves nothing"; fi
    [ "$rc" -eq 0 ] && [ "${failed:-0}" -eq 0 ] || fail "GPU tests failed (logs/tests.log)"
    if grep -q '^failure=' "$work/tests-summary.txt"; then say ""; say "Failed:"; sed -n 's/^failure=/- /p' "$work/tests-summary.txt" >>"$report"; fi
    if grep -q '^needmore=' "$work/tests-summary.txt"; then
      say ""; say "Not run, they need more GPUs than this host's $ngpus:"; sed -n 's/^needmore=/- /p' "$work/tests-summary.txt" >>"$report"
    fi
    if grep -q '^skip=' "$work/tests-summary.txt"; then
      say ""; say "Skipped for other reasons (simulation-only knobs, missing pieces):"; sed -n 's/^skip=/- /p' "$work/tests-summary.txt" >>"$report"
    fi
  fi
  snapshot
fi

# ---- conformance at 1 rank
for plugin in nccl ncclx; do
  if want "conformance-$plugin" 30; then
    section "Conformance: $plugin at 1 rank"
    run_step "conformance-$plugin" 120 "$bin" conformance "$plugin" --ranks 1 --junit "$work/results/conformance-$plugin.xml"
    rc=$?
    grep -E "verdict|Verdict|passed|failed" "$work/logs/conformance-$plugin.log" | tail -3 | sed 's/^/    /' >>"$report"
    [ "$rc" -eq 0 ] && say "passed" || fail "conformance $plugin (exit $rc; logs/conformance-$plugin.log)"
    snapshot
  fi
done

# ---- checked runs at 256 MiB and 1 GiB
if want large 20; then
  section "Checked runs at 256 MiB and 1 GiB"
  # A 1 GiB case spends seconds in the host-side check (pattern, upload, download, compare twice):
  # every op at 256 MiB, allreduce in both placements at 1 GiB.
  big=$(printf '%s\n' "$(cap 268435456)" "$(cap 1073741824)" | sort -un | paste -sd,)
  f=$(toml large "name = \"large\"
[defaults]
backends = [\"nccl\"]
memory = \"cuda\"
world_size = 1
warmup = 2
iterations = 5
check = true
[[run]]
name = \"256MiB\"
ops = [\"allreduce\", \"allgather\", \"reducescatter\", \"broadcast\"]
sizes = [$(cap 268435456)]
[[run]]
name = \"allreduce\"
ops = [\"allreduce\"]
sizes = [$big]
placement = [\"out_of_place\", \"in_place\"]")
  run_exp large 150 "$f" || fail "commbench run (exit $?; logs/large.log)"
  records_table large
  snapshot
fi

# ---- each timing method with CUDA events
if want methods 20; then
  section "Timing methods with cuda_event (allreduce, checked)"
  body="name = \"methods\""
  for m in batch per_iteration graph; do
    body="$body
[[run]]
name = \"$m\"
backends = [\"nccl\"]
memory = \"cuda\"
method = \"$m\"
gpu_timing = \"cuda_event\"
ops = [\"allreduce\"]
sizes = $(sizes_up_to "$(cap 16777216)" 16)
world_size = 1
warmup = 3
iterations = 20
check = true"
  done
  run_exp methods 90 "$(toml methods "$body")" || fail "commbench run (exit $?; logs/methods.log)"
  records_table methods
  snapshot
fi

# ---- commbench vs the direct loop (and nccl-tests)
if want direct 40; then
  section "commbench nccl vs a plain NCCL loop (bench/nccl_direct)"
  if [ ! -x "$direct" ]; then
    fail "nccl_direct is missing ($direct)"
  else
    say "Same method on both sides, means, 8 B .. $max_bytes, ×4 steps, $rounds alternating rounds (ratios: median, min..max over rounds)."
    for mode in batch per_iteration graph; do
      # per_iteration: one op per synchronised start is noisier (seen on an H200: 0.99..1.09 over
      # rounds at 32 MiB with 20 iterations): more iterations there.
      iters=20; [ "$mode" = per_iteration ] && iters=50
      COMMBENCH=$bin NCCL_DIRECT=$direct WORLD=1 MODE=$mode MAX=$max_bytes ITERS=$iters REPORT="$report" \
        NCCL_TESTS_DIR=$nccl_tests run_step "direct-$mode" 120 bash "$bench" "" "$rounds" ||
        fail "bench ($mode) exit $? (logs/direct-$mode.log)"
      cp "$work/logs/direct-$mode.log" "$work/results/" 2>/dev/null
      snapshot
    done
    grep -q '\*\*> 1.02\*\*' "$report" && { status=1; say "**A GPU-bound size is above 1.02x the direct loop (marked above).**"; }
  fi
fi

# ---- world size 1: allreduce algbw vs a device-to-device copy
if want d2d 15 && [ -x "$direct" ]; then
  one=$(cap 1073741824)
  section "Allreduce of $one B at world size 1 vs cudaMemcpy device-to-device"
  store=$(mktemp -d)
  run_step d2d-copy 60 "$direct" --rank 0 --world 1 --store "$store" --op d2d_copy --sizes "$one" --iters 10 --mode batch
  rm -rf "$store"
  f=$(toml one-rank "name = \"one-rank-allreduce\"
[[run]]
backends = [\"nccl\"]
memory = \"cuda\"
method = \"batch\"
gpu_timing = \"cuda_event\"
ops = [\"allreduce\"]
sizes = [$one]
world_size = 1
warmup = 3
iterations = 10
check = false")
  run_exp d2d 60 "$f" || fail "commbench run (exit $?; logs/d2d.log)"
  "${py:-python3}" - "$work/logs/d2d-copy.log" "$work/results/d2d" >>"$report" 2>&1 <<'PY' || status=1
import glob, json, sys
d2d = json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][0])
rec = [json.loads(l) for f in glob.glob(sys.argv[2] + "/*/results.jsonl") for l in open(f)]
case = [r for r in rec if r.get("type") == "case"][0]
ratio = case["algbw_gbps"] / d2d["algbw_GBps"] if d2d["algbw_GBps"] > 0 else 0
ok = ratio >= 0.9
print("allreduce algbw %.2f GB/s, D2D copy %.2f GB/s (counting the bytes once; x2 for read+write): %.3fx (target >= 0.9x)%s" % (
    case["algbw_gbps"], d2d["algbw_GBps"], ratio, "" if ok else " **missed**"))
sys.exit(0 if ok else 1)
PY
  snapshot
fi

# ---- the cuBLAS data-parallel workload at 1 rank
if want workload 20; then
  section "Data-parallel workload, cuBLAS compute, 1 rank"
  f=$(toml workload "name = \"workload\"
[[run]]
backends = [\"nccl\"]
memory = \"cuda\"
workload = \"data_parallel\"
model = \"resnet50\"
compute = \"flops\"
batch_size = 32
world_size = 1
steps = 5
warmup = 2
overlap = [true, false]")
  run_exp workload 90 "$f" || fail "commbench run (exit $?; logs/workload.log)"
  records_table workload
  snapshot
fi

# ---- two ranks on the one GPU: a correctness mode, and the refusal without it
if want shared 60; then
  section "Two ranks on one GPU (oversubscribe_gpu = true: correctness only, not a performance number)"
  f=$(toml shared "name = \"shared-gpu\"
[[run]]
name = \"oversubscribed\"
backends = [\"nccl\"]
memory = \"cuda\"
oversubscribe_gpu = true
ops = [\"allreduce\", \"allgather\", \"reducescatter\", \"broadcast\", \"alltoall\"]
sizes = $(sizes_up_to "$(cap 16777216)" 64)
world_size = 2
warmup = 1
iterations = 3
check = true
# What one rank never exercises (NCCL runs a lone rank as a copy, without kernels, proxy or
# connections): graph capture and per-iteration events around real collective kernels, a
# non-blocking communicator, grouped point-to-point and all_pairs on device buffers.
[[run]]
name = \"shared-graph\"
backends = [\"nccl\"]
memory = \"cuda\"
oversubscribe_gpu = true
ops = [\"allreduce\", \"allgather\"]
sizes = [1024, 1048576]
world_size = 2
iterations = 5
method = \"graph\"
[[run]]
name = \"shared-per-iteration\"
backends = [\"nccl\"]
memory = \"cuda\"
oversubscribe_gpu = true
ops = [\"allreduce\", \"reducescatter\"]
sizes = [1024, 1048576]
world_size = 2
iterations = 5
method = \"per_iteration\"
[[run]]
name = \"shared-non-blocking\"
backends = [\"nccl\"]
memory = \"cuda\"
oversubscribe_gpu = true
ops = [\"allreduce\", \"sendrecv\"]
sizes = [1024, 1048576]
world_size = 2
iterations = 5
options.nccl = { blocking = 0 }
[[run]]
name = \"shared-p2p\"
backends = [\"nccl\"]
memory = \"cuda\"
oversubscribe_gpu = true
ops = [\"pingpong\", \"unidir_bw\", \"bidir_bw\", \"sendrecv\", \"all_pairs\"]
sizes = [4096, 1048576]
world_size = 2
iterations = 5
# Buffers from ncclMemAlloc registered with ncclCommRegister (registration = on), and fp8 avg,
# which NCCL refuses at one rank but runs as a pre-multiplied sum from two (sm90 and newer).
[[run]]
name = \"shared-registration\"
backends = [\"nccl\"]
memory = \"cuda\"
oversubscribe_gpu = true
ops = [\"allreduce\", \"allgather\", \"sendrecv\"]
sizes = [4096, 4194304]
world_size = 2
iterations = 5
check = true
options.nccl = { registration = \"on\" }
[[run]]
name = \"shared-fp8-avg\"
backends = [\"nccl\"]
memory = \"cuda\"
oversubscribe_gpu = true
ops = [\"allreduce\", \"reducescatter\", \"reduce\"]
dtypes = [\"f8e4m3\", \"f8e5m2\"]
redops = [\"avg\"]
sizes = [4096, 1048576]
world_size = 2
iterations = 3
check = true
[[run]]
name = \"refused\"
backends = [\"nccl\"]
memory = \"cuda\"
ops = [\"allreduce\"]
sizes = [1024]
world_size = 2
check = true
env = { CUDA_VISIBLE_DEVICES = \"0\" }")
  run_exp shared 240 "$f"
  rc=$?
  "${py:-python3}" - "$work/results/shared" >"$work/shared-summary.txt" 2>&1 <<'PY'
import glob, json, sys
recs = [json.loads(l) for f in glob.glob(sys.argv[1] + "/*/results.jsonl") for l in open(f)]
cases = [r for r in recs if r.get("type") == "case" and r.get("run") != "refused"]
ex = [r for r in recs if r.get("type") == "execution"]
ok = [c for c in cases if c.get("status") == "ok" and c.get("wrong") == 0 and c.get("oversubscribe_gpu")]
# fp8 reductions below compute capability 9.0 are refused as unsupported, with the reason.
ok += [c for c in cases if c.get("run") == "shared-fp8-avg" and c.get("status") == "unsupported"
       and "compute capability" in (c.get("reason") or "")]
print("two ranks, one GPU: %d of %d cases ok and checked (wrong = 0), labelled oversubscribe_gpu" % (len(ok), len(cases)))
for run in sorted({c.get("run") for c in cases}):
    mine = [c for c in cases if c.get("run") == run]
    bad = [c for c in mine if c not in ok]
    print("  %s: %d of %d ok%s" % (run, len(mine) - len(bad), len(mine),
          "".join("; %s %s B %s: %s" % (c.get("op"), c.get("bytes"), c.get("status"), (c.get("reason") or "")[:160])
                  for c in bad[:3])))
ref = [e for e in ex if e.get("run") == "refused"]
if ref:
    print("refused: status %s — %s" % (ref[0].get("status"), (ref[0].get("reason") or ref[0].get("failure") or "")[:300]))
sys.exit(0 if cases and len(ok) == len(cases) and ref and ref[0].get("status") == "unavailable" else 1)
PY
  prc=$?
  sed 's/^/- /' "$work/shared-summary.txt" >>"$report"
  [ "$prc" -eq 0 ] || fail "two ranks on one GPU (run exit $rc; logs/shared.log)"
  snapshot
fi

elapsed=$(( $(date +%s) - began ))
section "Verdict"
if [ "$status" -eq 0 ]; then say "every step passed and every target was met ($elapsed s)"
else say "**something failed, missed its target or did not run** ($elapsed s)${not_run[*]:+; not run: ${not_run[*]}}"; fi
snapshot
cat "$report"
echo "gpu-acceptance: report in $report, results in $out/results.tar.gz" >&2
exit "$status"
