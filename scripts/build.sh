#!/usr/bin/env bash
# Configures and builds commbench into build/ (Release with debug info). Extra arguments go to
# the CMake configure step, e.g. scripts/build.sh -DCOMMBENCH_BUILD_BENCH=OFF.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S "$root" -B "$root/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
cmake --build "$root/build" -j "$jobs"
