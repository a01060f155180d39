#!/usr/bin/env bash
# Builds the store-protocol fuzzer with clang's libFuzzer (+ ASan/UBSan) and runs it for a bounded
# time from a seed corpus of valid requests. Exit 77 (ctest: skipped) when clang or libFuzzer is
# missing; non-zero with the crashing input kept when the fuzzer finds something.
# Usage: run_fuzzer.sh SOURCE_DIR WORK_DIR SECONDS
set -euo pipefail
src=$1 work=$2 seconds=$3
cxx=$(command -v clang++ || command -v clang++-14 || true)
[ -n "$cxx" ] || { echo "SKIP: clang++ not installed (Debian clang-14 + libclang-rt-14-dev)"; exit 77; }
mkdir -p "$work/corpus" "$work/seeds"
if ! "$cxx" -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
     -I"$src/core/src" -I"$src/core/include" \
     "$src/core/src/bootstrap/wire_protocol.cpp" "$src/tests/fuzz/store_message_fuzzer.cpp" \
     -lfmt -o "$work/store_fuzzer" 2>"$work/build.log"; then
  if grep -q "libclang_rt.fuzzer\|cannot find -l.*fuzzer\|fuzzer.*No such file" "$work/build.log"; then
    echo "SKIP: libFuzzer runtime missing (Debian libclang-rt-14-dev)"; exit 77
  fi
  cat "$work/build.log"; exit 1
fi
# Seeds: one valid frame per request type, so the fuzzer starts inside the grammar.
printf '\x0d\x00\x00\x00\x01CBST\x01\x00\x00\x00\x00\x00\x00\x00' >"$work/seeds/hello"
printf '\x0e\x00\x00\x00\x02\x01\x00\x00\x00k\x04\x00\x00\x00vvvv' >"$work/seeds/set"
printf '\x0a\x00\x00\x00\x03\xe8\x03\x00\x00\x01\x00\x00\x00k' >"$work/seeds/get"
cd "$work"
./store_fuzzer -max_total_time="$seconds" -rss_limit_mb=1024 -max_len=4096 -print_final_stats=1 \
  corpus seeds 2>&1 | tail -15
