#!/usr/bin/env bash
# Quick start, step 1: install dependencies, build, and run configs/quickstart.toml
# (Gloo, 4 local ranks on this host; results in results/quickstart-<timestamp>/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
cd "$root"
exec "$root/build/bin/commbench" run configs/quickstart.toml
