#!/usr/bin/env bash
# bench/run_p2p_layers.sh end to end at its smallest: 2 rounds of an 8 B ping-pong through every
# layer, so that the script, its two C programs and its summary do not rot between the runs made
# by hand. It checks the shape of the output, not the numbers (a CI machine's timings prove
# nothing). Skips (77) where the bench's own tools are missing: ucx_perftest, or Open MPI's
# compiler with its headers (libopenmpi-dev is a bench-only dependency).
# Usage: p2p_layers_smoke.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
root=$1
build=$2
for tool in ucx_perftest mpicc mpirun; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not found (the bench needs ucx-utils and Open MPI)"; exit 77; }
done
echo '#include <mpi.h>' | mpicc -E -x c - >/dev/null 2>&1 ||
  { echo "SKIP: mpicc has no mpi.h (apt-get install libopenmpi-dev: a bench-only dependency)"; exit 77; }
status=0
out=$(SIZES=8 ITERS=2000 "$root/bench/run_p2p_layers.sh" "$build" 2 2>&1) || status=$?
echo "$out"
((status == 0)) || { echo "FAIL: run_p2p_layers.sh exited with $status"; exit 1; }
num='[0-9]+\.[0-9]+'
ratio="$num \($num\.\.$num\)"
grep -qE "^ +8 +$num +$num +$num +$num +$ratio +$ratio +$ratio +$ratio$" <<<"$out" ||
  { echo "FAIL: no row for 8 bytes with four p50s and four ratios"; exit 1; }
grep -qE "^2 rounds, order rotating each round$" <<<"$out" || { echo "FAIL: no closing line"; exit 1; }
echo "PASS"
