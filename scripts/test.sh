#!/usr/bin/env bash
# Quick start, step 2 (and what CI runs): install dependencies, build, run every test.
# Tests that need a GPU report SKIP with the reason when there is none.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
cd "$root/build"
ctest --output-on-failure --timeout 900 -j "$(nproc 2>/dev/null || echo 2)" "$@"
