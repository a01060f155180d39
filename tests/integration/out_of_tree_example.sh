#!/usr/bin/env bash
# The vendor's path, proven: install commbench into a prefix, build examples/store_backend
# against it with find_package(commbench) only, then run it next to gloo in one job and check
# both produced correct results and a side-by-side comparison.
set -euo pipefail
build_dir=$1 src_dir=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
prefix=$work/prefix

cmake --install "$build_dir" --prefix "$prefix" >"$work/install.log"
test -x "$prefix/bin/commbench"
test -f "$prefix/include/commbench/backend.h"
test -f "$prefix/lib/commbench/plugins/libcommbench_backend_gloo.so"
test -f "$prefix/share/doc/commbench/plugin-abi.md"  # the docs --help points at

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$src_dir/examples/store_backend" -B "$work/example" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >"$work/configure.log"
cmake --build "$work/example" >"$work/build.log"
plugin=$(find "$work/example" -name 'libcommbench_backend_store.so' | head -n1)
test -n "$plugin" || { echo "example plugin was not built"; exit 1; }

# The installed binary finds the installed gloo plugin by itself and the example through the
# environment, as a vendor's user would.
export COMMBENCH_PLUGIN_PATH=$(dirname "$plugin")
"$prefix/bin/commbench" plugins | tee "$work/plugins.txt"
grep -q '^store' "$work/plugins.txt" || grep -q 'store' "$work/plugins.txt"
# Its option table, exported by the SDK as the ABI 1.2 descriptors, is what `plugins store` lists.
"$prefix/bin/commbench" plugins store | tee "$work/plugins-store.txt"
grep -q 'timeout_ms .*int -1..2147483647, default 60000' "$work/plugins-store.txt"

# What the docs tell a vendor to run before shipping: the example passes conformance at 1-4 ranks.
"$prefix/bin/commbench" conformance store --junit "$work/conformance.xml" | tee "$work/conformance.txt"
grep -q '^verdict: PASS' "$work/conformance.txt"
grep -q 'failures="0"' "$work/conformance.xml"
grep -q 'option descriptors *pass' "$work/conformance.txt"

cat >"$work/side_by_side.toml" <<'TOML'
name = "side-by-side"
[[run]]
name = "compare"
backends = ["gloo", "store"]
ops = ["allreduce", "allgather"]
sizes = ["1KiB", "16KiB"]
world_size = 3
warmup = 1
iterations = 3
TOML
cd "$work"
"$prefix/bin/commbench" run side_by_side.toml -o "$work/out" | tee "$work/run.txt"
job=$(ls -d "$work"/out/*/)
python3 - "$job" <<'PY'
import json, sys, pathlib
job = pathlib.Path(sys.argv[1])
cases = [json.loads(l) for l in (job / "results.jsonl").read_text().splitlines()]
cases = [c for c in cases if c.get("type") == "case"]
by_backend = {}
for c in cases:
    assert c["status"] == "ok", c
    assert c["wrong"] == 0, c
    by_backend[c["backend"]] = by_backend.get(c["backend"], 0) + 1
assert by_backend == {"gloo": 4, "store": 4}, by_backend
md = (job / "summary.md").read_text()
assert "gloo" in md and "store" in md, md
print("out-of-tree example: OK", by_backend)
PY
grep -qi 'ratio' "$work/run.txt" || { echo "no side-by-side comparison in the console output"; exit 1; }
