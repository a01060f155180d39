#!/usr/bin/env bash
# Configures and builds commbench into build/ (Release with debug info). Extra arguments go to
# the CMake configure step, e.g. scripts/build.sh -DCOMMBENCH_BUILD_BENCH=OFF.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
jobs=$(nproc 2>/dev/null || echo 2)
# Unity build (CMake batches ~8 sources per compiler run): the headers every file includes
# (nlohmann/json, fmt, gtest, Boost) are parsed once per batch instead of once per file, which
# shortens a cold build on a small CI machine. COMMBENCH_UNITY_BUILD=OFF for
# file-by-file rebuilds while editing.
cmake -S "$root" -B "$root/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_UNITY_BUILD=${COMMBENCH_UNITY_BUILD:-ON}" "$@"
cmake --build "$root/build" -j "$jobs"
