#!/usr/bin/env bash
# The relocatable release (docs/install.md): the tarball scripts/package.sh made (ctest fixture
# `release_package`) unpacked into an empty folder and run with the build tree, the source tree
# and the system's own copy of every library the tarball bundles out of reach (a private mount
# namespace: tmpfs over the trees, /dev/null over each system copy, so a program that still used
# one would fail to load it). Every non-glibc/libstdc++ library must resolve inside the tarball,
# and commbench --version, plugins, validate and a quick Gloo + UCX run must work from there.
# release_tarball_test.sh <source dir> <build dir>
set -euo pipefail
src=$1 build=$2
tarball=$(ls "$build"/package/commbench-*-linux-*.tar.gz 2>/dev/null | head -1)
[ -n "$tarball" ] || { echo "release_tarball_test: no tarball in $build/package (fixture release_package)"; exit 1; }
if [ "$(id -u)" -ne 0 ] || ! unshare -m true 2>/dev/null; then
  echo "release_tarball_test: needs root and mount namespaces to hide the build tree; skipped"
  exit 77
fi
work=$(mktemp -d /tmp/commbench-release.XXXXXX)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xzf "$tarball"
rel=$(ls -d "$work"/commbench-*)
bundled=$(sed -n 's/^Bundled in lib\/: //p' "$rel/RELEASE.txt")
[ -n "$bundled" ] && [ "$bundled" != "(nothing)" ] || { echo "release_tarball_test: RELEASE.txt lists no bundled library"; exit 1; }
hide=()
for so in $bundled; do
  # awk reads all of ldconfig's output: an early exit would SIGPIPE it and, under pipefail, end the script silently.
  sys=$(ldconfig -p | awk -v so="$so" '$1 == so && /x86-64/ && !found {print $NF; found = 1}')
  [ -n "$sys" ] && hide+=("$(readlink -f "$sys")")
done
ucx_modules=$(ls -d /usr/lib/x86_64-linux-gnu/ucx 2>/dev/null || true)

unshare -m --propagation private bash -s "$rel" "$build" "$src" "$ucx_modules" "${hide[@]}" <<'INNER'
set -euo pipefail
rel=$1 build=$2 src=$3 ucx=$4; shift 4
mount -t tmpfs none "$build"
mount -t tmpfs none "$src"
[ -n "$ucx" ] && mount -t tmpfs none "$ucx"
for f in "$@"; do mount --bind /dev/null "$f"; done
fail() { echo "release_tarball_test: $*"; exit 1; }
[ ! -e "$build/bin/commbench" ] || fail "the build tree is still visible"
# Every library outside glibc/libstdc++/libgcc and the GPU stack resolves inside the tarball.
for f in "$rel"/bin/commbench "$rel"/lib/commbench/plugins/*.so "$rel"/libexec/commbench/*; do
  ldd "$f" | awk '$2 == "=>" {print $1, $3}' | while read -r so path; do
    case $so in
      ld-linux*|libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|libstdc++.so*|libgcc_s.so*) continue ;;
      libcuda*|libcudart*|libnccl*|libnvidia-ml*|libcublas*) continue ;;
    esac
    case $path in "$rel"/*) ;; *) fail "$(basename "$f") needs $so from $path, outside the tarball" ;; esac
  done
done
# An empty folder beside the unpacked tarball, so that the results go when the outer $work does.
mkdir "${rel%/*}/run" && cd "${rel%/*}/run"
version=$("$rel/bin/commbench" --version) && grep -q "commbench" <<<"$version" || fail "--version"
plugins=$("$rel/bin/commbench" plugins 2>&1) || fail "plugins: $plugins"
for p in gloo ucx; do grep -qE "^$p [0-9.]+ \(ABI 1\.[0-9]+\)" <<<"$plugins" || fail "plugin $p does not load: $plugins"; done
"$rel/bin/commbench" validate "$rel/share/commbench/configs/quickstart.toml" >/dev/null || fail "validate"
out=$("$rel/bin/commbench" quick allreduce --backend gloo,ucx --ranks 2 -b 8 -e 64K -f 8 --output-dir results 2>&1) ||
  fail "quick run: $out"
[ "$(ls results/*/results.jsonl | wc -l)" -ge 1 ] || fail "no results.jsonl"
python3 - results <<'PY' || fail "records"
import glob, json, sys
recs = [json.loads(l) for f in glob.glob(sys.argv[1] + "/*/results.jsonl") for l in open(f)]
cases = [r for r in recs if r.get("type") == "case"]
assert {r["backend"] for r in cases} == {"gloo", "ucx"}, cases
assert all(r["status"] == "ok" and r["wrong"] == 0 for r in cases), [r for r in cases if r["status"] != "ok"]
PY
echo "release_tarball_test: ok from $rel with the build tree and ${#@} system libraries hidden"
INNER
