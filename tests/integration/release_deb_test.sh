#!/usr/bin/env bash
# The Debian package of the same build (docs/install.md): what it installs and that its Depends,
# computed by dpkg-shlibdeps, name the runtime packages of every library the binaries link, so that
# `apt install ./commbench_*.deb` pulls them in on a fresh Debian 12. apt resolves it here
# (simulated: nothing is installed).
# release_deb_test.sh <build dir>
set -euo pipefail
build=$1
deb=$(ls "$build"/package/commbench_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || { echo "release_deb_test: no .deb in $build/package (fixture release_package)"; exit 1; }
fail() { echo "release_deb_test: $*"; exit 1; }
depends=$(dpkg-deb -f "$deb" Depends)
for pkg in libfmt9 libboost-program-options1.74.0 libtomlplusplus3 libgloo0 libucx0 python3; do
  grep -q "$pkg" <<<"$depends" || fail "Depends lacks $pkg: $depends"
done
grep -q "nccl\|cuda" <<<"$depends" && fail "Depends names CUDA/NCCL, which are not Debian packages: $depends"
contents=$(dpkg-deb -c "$deb")
for f in ./usr/bin/commbench ./usr/lib/commbench/plugins/libcommbench_backend_gloo.so \
         ./usr/include/commbench/backend.h ./usr/lib/cmake/commbench/commbenchConfig.cmake; do
  grep -q " $f\$" <<<"$contents" || fail "the package lacks $f"
done
apt-get install -s "$deb" >"$build/package/apt-simulate.log" 2>&1 || { cat "$build/package/apt-simulate.log"; fail "apt cannot resolve it"; }
echo "release_deb_test: ok ($(basename "$deb"); Depends: $depends)"
