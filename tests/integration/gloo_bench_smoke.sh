#!/usr/bin/env bash
# bench/run_gloo_bench.sh end to end at its smallest: 2 rounds, 2 ranks in place, 1 MiB, with the
# A/A part, so that every part and the pooled lines of parts 2 and 2b are printed. A benchmark is run by hand; this
# keeps the script and its summary from rotting between those runs. It checks the shape of the
# output, not the numbers (a CI machine's timings prove nothing).
# Usage: gloo_bench_smoke.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
root=$1
build=$2
status=0
out=$(AA=1 SIZES=1048576 WORLDS=2 PLACEMENTS=in ITERS_SMALL=50 ITERS_HOST=2000 \
  "$root/bench/run_gloo_bench.sh" "$build" 2 2>&1) || status=$?
echo "$out"
if ((status != 0)); then
  echo "FAIL: run_gloo_bench.sh exited with $status"
  exit 1
fi
need() {  # regex, what it is
  grep -qE "$1" <<<"$out" || { echo "FAIL: no $2 in the output"; exit 1; }
}
num='[0-9]+\.[0-9]+'
need "^ +2 +in +1024 +$num +$num +$num " "row for part 1 (gloo_direct against the minimal loop at 1 KiB)"
need "^ +2 +in +1048576 +$num +$num +$num " "row for part 2 at 1 MiB"
need "pooled over 2 paired rounds of 1 case\(s\) from 1 MiB: geometric mean $num, 95% bootstrap interval $num\.\.$num \(cases, then rounds, resampled\); [0-2] rounds above 1" \
  "pooled line for part 2"
need "^2b\. A/A: bench/gloo_direct against itself" "title of part 2b (A/A)"
pooled=$(grep -cE "pooled over 2 paired rounds of 1 case\(s\) from 1 MiB" <<<"$out" || true)
[ "$pooled" = 2 ] || { echo "FAIL: $pooled pooled lines, expected 2 (parts 2 and 2b)"; exit 1; }
cases=$(grep -cE "^   [01] of 1 case medians above 1\.02$" <<<"$out" || true)
[ "$cases" = 2 ] || { echo "FAIL: $cases 'case medians above 1.02' lines, expected 2"; exit 1; }
need "^ +1 +in +4 +$num +$num +$num " "row for part 3 (1 rank, 4 bytes)"
need "commbench adds -?$num us per op" "host cost per op"
echo "ok: every part of run_gloo_bench.sh printed"
