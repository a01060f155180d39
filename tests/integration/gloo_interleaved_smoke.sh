#!/usr/bin/env bash
# bench/run_gloo_interleaved.sh end to end at its smallest: 2 launches of 2 ranks in place at
# 64 KiB, both placements, 6 blocks each, so that the table rows and the summary line are printed
# (each launch also checks every side's result in both placements); and a bad flag and a bad
# BLOCKS refused by name. A benchmark is run by hand; this keeps the
# script, its summary and the program's check of the plugin's results from rotting between those
# runs. It checks the shape of the output, not the numbers (a CI machine's timings prove nothing).
# Usage: gloo_interleaved_smoke.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
root=$1
build=$2
status=0
out=$(LAUNCHES=2 BLOCKS=6 WORLDS=2 PLACEMENTS="in out" SIZES=65536 "$root/bench/run_gloo_interleaved.sh" "$build" 2>&1) ||
  status=$?
echo "$out"
if ((status != 0)); then
  echo "FAIL: run_gloo_interleaved.sh exited with $status"
  exit 1
fi
num='[0-9]+\.[0-9]+'
for place in in out; do
  grep -qE "^ +2 +$place +65536 +2 +$num +$num +$num \($num\.\.$num\) +$num \($num\.\.$num\)  (met|missed|not resolved|not resolved \(A/A beyond 2 %\))$" <<<"$out" ||
    { echo "FAIL: no row for 2 ranks, $place, 65536 bytes, 2 launches"; exit 1; }
done
grep -qE "^   [0-2] of 2 cases met \(interval at or below 1\.02\), [0-2] missed \(interval above\), [0-2] not resolved \(interval across 1\.02, or the A/A's beyond 2 %\)$" <<<"$out" ||
  { echo "FAIL: no summary line"; exit 1; }

status=0
err=$("$build/bench/gloo_interleaved" --plugin x.so --world 2 --store /nonexistent --sizes 4 --pin sideways 2>&1) || status=$?
[ "$status" = 2 ] || { echo "FAIL: --pin sideways exited with $status, expected 2"; exit 1; }
grep -q -- "--pin is none, rank or spread, got 'sideways'" <<<"$err" || { echo "FAIL: --pin sideways not named: $err"; exit 1; }
status=0
err=$(BLOCKS=7 "$root/bench/run_gloo_interleaved.sh" "$build" 2>&1) || status=$?
[ "$status" = 2 ] || { echo "FAIL: BLOCKS=7 exited with $status, expected 2"; exit 1; }
grep -q "BLOCKS=7: expected a multiple of 6" <<<"$err" || { echo "FAIL: BLOCKS=7 not named: $err"; exit 1; }
echo "ok: run_gloo_interleaved.sh printed every case and its summary"
