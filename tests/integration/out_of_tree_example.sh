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
grep -q "$prefix/share/doc/commbench" <<<"$("$prefix/bin/commbench" --help)"  # ...the installed ones
# Every relative link of the installed docs resolves under the prefix (the links into the source
# tree, ../examples and ../core/include, once pointed at nothing there).
find "$prefix/share/doc/commbench" -name '*.md' | while read -r doc; do
  { grep -o ']([^)#:]\+[)#]' "$doc" || true; } | sed 's/^](//; s/.$//' | while read -r link; do
    test -e "$(dirname "$doc")/$link" || { echo "$doc: link $link resolves to nothing"; exit 1; }
  done
done
# Completions and the man page, generated from the command definitions, installed with it.
grep -q -- '--max-bytes' "$prefix/share/bash-completion/completions/commbench"
grep -q '^#compdef commbench' "$prefix/share/zsh/site-functions/_commbench"
grep -q '^.TH COMMBENCH 1' "$prefix/share/man/man1/commbench.1"

# The template is installed with the SDK: a vendor copies it from the prefix, not a checkout.
example_src=$prefix/share/commbench/examples/store_backend
test -f "$example_src/CMakeLists.txt"
diff -r -x build "$src_dir/examples/store_backend" "$example_src" >/dev/null

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# commbench_add_plugin links with -z defs: a symbol nothing provides fails the vendor's build.
mkdir -p "$work/undefined/src"
cat >"$work/undefined/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(undefined_backend LANGUAGES C)
find_package(commbench REQUIRED)
commbench_add_plugin(undefined SOURCES src/entry.c)
CMAKE
cat >"$work/undefined/src/entry.c" <<'C'
#include <commbench/backend.h>
extern int vendor_helper_that_nobody_defines(void);
CB_EXPORT const cb_backend_api* commbench_backend_v1(void) { return vendor_helper_that_nobody_defines() ? 0 : 0; }
C
cmake -S "$work/undefined" -B "$work/undefined/build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$prefix" >"$work/undefined.log" 2>&1
if cmake --build "$work/undefined/build" >>"$work/undefined.log" 2>&1; then
  echo "a plugin with an undefined symbol linked: commbench_add_plugin does not use -z defs"; exit 1
fi
grep -q 'vendor_helper_that_nobody_defines' "$work/undefined.log"

cmake -S "$example_src" -B "$work/example" "${generator[@]}" \
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
"$prefix/bin/commbench" conformance store --max-bytes 1MiB --junit "$work/conformance.xml" | tee "$work/conformance.txt"
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
