#!/usr/bin/env bash
# The GPU acceptance run as it happens on a bare GPU machine, on the simulated GPU: the release
# tarball (scripts/package.sh) unpacked into an empty folder, the simulated libcudart, libcublas and
# libnccl placed where pip puts them (a venv's site-packages/nvidia/{cu13,nccl}/lib), NVML in a
# driver folder, one GPU (SIMGPU_DEVICE_COUNT=1), a clean environment (no LD_LIBRARY_PATH: the
# script must find the libraries itself). Checks the plumbing and the verdicts, not the numbers,
# which mean nothing on a CPU emulation. Then the same tarball on a host whose CUDA runtime sees no
# device: exit 3, "nothing was measured", never a pass.
# acceptance_script_test.sh <source dir> <build dir> <work dir>
set -euo pipefail
src=$1 build=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "acceptance_script_test: $*"; [ -f "$work/stdout.log" ] && tail -60 "$work/stdout.log"; exit 1; }

# The tarball of the ctest fixture `release_package` (tests/integration), else made here.
tarball=$(ls "$build"/package/commbench-*-linux-*.tar.gz 2>/dev/null | head -1)
if [ -z "$tarball" ]; then
  "$src/scripts/package.sh" "$build" "$work/pkg" --no-deb >"$work/package.log" 2>&1 || { cat "$work/package.log"; fail "packaging failed"; }
  tarball=$(ls "$work"/pkg/commbench-*.tar.gz)
fi
mkdir "$work/unpacked"
tar -C "$work/unpacked" -xzf "$tarball"
release=$(ls -d "$work"/unpacked/commbench-*)

site=$work/venv/lib/python3.12/site-packages
mkdir -p "$site/nvidia/cu13/lib" "$site/nvidia/nccl/lib" "$work/driver"
cp "$build/simgpu/lib/libcudart.so.13" "$site/nvidia/cu13/lib/"
[ -e "$build/simgpu/lib/libcublas.so.13" ] && cp "$build/simgpu/lib/libcublas.so.13" "$site/nvidia/cu13/lib/"
cp "$build/simgpu/lib/libnccl.so.2" "$site/nvidia/nccl/lib/"
cp "$build/simgpu/lib/libnvidia-ml.so.1" "$work/driver/"

t0=$(date +%s)
set +e
env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$work" VIRTUAL_ENV="$work/venv" SIMGPU_DEVICE_COUNT=1 \
  SIMGPU_NCCL_LAUNCH_DELAY_MS=2 "$release/bin/commbench-gpu-acceptance" "$work/out" --lib-dir "$work/driver" \
  --max-bytes 65536 --rounds 1 --budget 175 >"$work/stdout.log" 2>&1
status=$?
set -e
took=$(( $(date +%s) - t0 ))
report=$work/out/report.md
[ -f "$report" ] || fail "no report.md (exit $status)"
# Numbers on a CPU emulation may miss the GPU targets: 0 or 1, never 3 (a GPU was found).
[ "$status" -eq 0 ] || [ "$status" -eq 1 ] || fail "exit status $status (0 or 1 expected)"
grep -q "Simulated device (tests/simgpu)" "$report" || fail "the report does not say the device is simulated"
grep -q "| libnccl.so.2 | $site/nvidia/nccl/lib/libnccl.so.2" "$report" || fail "libnccl.so.2 not found in the wheel folder"
grep -q "| libcudart.so.13 | $site/nvidia/cu13/lib/libcudart.so.13" "$report" || fail "libcudart.so.13 not found in the wheel folder"
grep -q "| libnvidia-ml.so.1 | $work/driver/libnvidia-ml.so.1" "$report" || fail "libnvidia-ml.so.1 not found in --lib-dir"
grep -q "^- NCCL: 2.28.9" "$report" || fail "no NCCL version"
grep -qE "^executed [1-9][0-9]*: [0-9]+ passed, 0 failed" "$report" || fail "no GPU test executed, or some failed"
grep -q "Not run, they need more GPUs than this host's 1:" "$report" || fail "tests needing two GPUs not listed as not run"
grep -q "^- GpuFidelity.TwoRanksOnOneGpuNeedOversubscribeGpuAndAreLabelled" "$report" && fail "a one-GPU test was not run"
for plugin in nccl ncclx; do
  section=$(sed -n "/^## Conformance: $plugin at 1 rank/,/^## /p" "$report")
  grep -q "^passed" <<<"$section" || fail "conformance $plugin did not pass"
done
for mode in batch per_iteration graph; do
  grep -q "nccl allreduce, world 1, timing $mode" "$report" || fail "no $mode table"
done
# 8, 32, ..., 32768 bytes in each table, with a ratio.
rows=$(grep -cE '^\| (8|32|128|512|2048|8192|32768) \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \(' "$report")
[ "$rows" -eq 21 ] || fail "expected 21 size rows with ratios (7 sizes x 3 methods), found $rows"
grep -q "host cost per op (sizes <= 64 KiB, median): direct" "$report" || fail "no host cost per op"
grep -qE "^allreduce algbw [0-9.]+ GB/s, D2D copy [0-9.]+ GB/s" "$report" || fail "no D2D comparison"
grep -qE "^- two ranks, one GPU: ([0-9]+) of \1 cases ok" "$report" || fail "two ranks on one GPU did not all pass"
for run in oversubscribed shared-graph shared-per-iteration shared-non-blocking shared-p2p shared-registration \
  shared-fp8-avg; do
  grep -qE "^-   $run: ([0-9]+) of \1 ok$" "$report" || fail "two ranks on one GPU: run $run missing or not all ok"
done
grep -q "^- refused: status unavailable — ranks 0 and 1 would share one GPU" "$report" || fail "the refusal without oversubscribe_gpu is missing"
section=$(sed -n '/^## Data-parallel workload/,/^## /p' "$report")
grep -q ", 0 not ok" <<<"$section" || fail "the workload step did not pass"
grep -q "^## Verdict" "$report" || fail "no verdict"
[ -s "$work/out/results.tar.gz" ] || fail "no results.tar.gz"
listing=$(tar -tzf "$work/out/results.tar.gz")
grep -q "results/smoke/" <<<"$listing" || fail "results.tar.gz lacks the smoke results"
[ "$took" -lt 180 ] || fail "took $took s (the budget says 175)"

# No device: the CUDA runtime loads but sees nothing (SIMGPU_DEVICE_COUNT=0). Nothing measured, exit 3.
set +e
env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$work" VIRTUAL_ENV="$work/venv" SIMGPU_DEVICE_COUNT=0 \
  "$release/bin/commbench-gpu-acceptance" "$work/out-none" --lib-dir "$work/driver" >"$work/none.log" 2>&1
none=$?
set -e
[ "$none" -eq 3 ] || { cat "$work/none.log"; fail "without a device the exit status is $none, not 3"; }
grep -q "No GPU visible: nothing was measured" "$work/out-none/report.md" || fail "no-device report does not say nothing was measured"
echo "acceptance_script_test: report complete ($report), exit $status, $took s"
