#!/usr/bin/env bash
# Makes the releases of a build (docs/install.md):
#   <out>/commbench-<version>-linux-<arch>.tar.gz  relocatable: bin/commbench, the plugins, the SDK
#       headers, the CMake package, docs, the GPU acceptance kit (libexec/commbench/: the GPU test
#       binary and nccl_direct; bin/commbench-gpu-acceptance) and every non-system shared library
#       they need in lib/, found through $ORIGIN-relative RUNPATHs: unpack anywhere and run.
#   <out>/commbench_<version>_<arch>.deb  the same build for `apt install ./commbench_*.deb`
#       (dependencies from dpkg-shlibdeps; nothing bundled).
# Left out of lib/ on purpose: glibc, libstdc++ and libgcc_s (the system's, newer is compatible),
# and the GPU stack (libcuda, libcudart, libcublas, libnccl, libnvidia-ml), which must be the
# machine's own: scripts/gpu-acceptance.sh finds them there or in a Python environment's wheels.
#
# Usage: scripts/package.sh [build-dir] [out-dir] [--no-deb]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$build/package}
deb=1
for a in "$@"; do [ "$a" = --no-deb ] && deb=0; done
mkdir -p "$out"
out=$(cd "$out" && pwd)
command -v patchelf >/dev/null || { echo "package: patchelf is needed (apt-get install patchelf)" >&2; exit 2; }

version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
[ -n "$version" ] || version=$(grep -m1 -oP 'project\(commbench VERSION \K[0-9.]+' "$root/CMakeLists.txt")
arch=$(uname -m)
name=commbench-$version-linux-$arch
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
prefix=$stage/$name

cmake --install "$build" --prefix "$prefix" --strip >/dev/null

# Libraries never bundled: the C/C++ runtime the system provides, and the GPU stack.
system_lib() {
  case $1 in
    linux-vdso.so.*|ld-linux*.so.*|libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|libresolv.so.*|\
    libutil.so.*|libstdc++.so.*|libgcc_s.so.*) return 0 ;;
    libcuda.so.*|libcudart.so.*|libcublas.so.*|libcublasLt.so.*|libnccl.so.*|libnvidia-ml.so.*|libnvrtc.so.*) return 0 ;;
  esac
  return 1
}

# Copies every library `elf` needs (transitively, as ldd resolves them) into lib/.
bundle_deps_of() {
  local elf=$1 line soname path
  while IFS= read -r line; do
    soname=$(awk '{print $1}' <<<"$line")
    path=$(awk '$2 == "=>" {print $3}' <<<"$line")
    [ -n "$soname" ] || continue
    system_lib "$soname" && continue
    if [ "$path" = "not" ] || [ -z "$path" ]; then
      case $line in *"=>"*) echo "package: $elf needs $soname, which is not found here" >&2; exit 1 ;; esac
      continue
    fi
    [ -e "$prefix/lib/$soname" ] && continue
    case $path in "$prefix"/*) continue ;; esac  # already in the tarball (a UCX module beside another)
    cp -L "$path" "$prefix/lib/$soname"
    chmod u+w "$prefix/lib/$soname"
    patchelf --set-rpath '$ORIGIN' "$prefix/lib/$soname"
    bundled+=("$soname")
  done < <(ldd "$elf" 2>/dev/null | grep -v 'statically linked')
}

elfs=()
while IFS= read -r f; do
  [ "$(head -c4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] && elfs+=("$f")
done < <(find "$prefix/bin" "$prefix/lib" "$prefix/libexec" -type f 2>/dev/null)
bundled=()
for f in "${elfs[@]}"; do bundle_deps_of "$f"; done
# UCX loads its transports as modules from <dir of libucs>/ucx: they travel beside it.
if [ -e "$prefix/lib/libucs.so.0" ]; then
  ucx_modules=$(dirname "$(ldd "$build"/lib/commbench/plugins/libcommbench_backend_ucx.so | awk '$1 == "libucs.so.0" {print $3}')")/ucx
  if [ -d "$ucx_modules" ]; then
    mkdir -p "$prefix/lib/ucx"
    cp -P "$ucx_modules"/*.so* "$prefix/lib/ucx/"  # the files and their soname links
    for m in "$prefix"/lib/ucx/*.so*; do
      [ -L "$m" ] && continue
      chmod u+w "$m"
      patchelf --set-rpath '$ORIGIN:$ORIGIN/..' "$m"  # each other (rdmacm needs ib), then lib/
    done
    for m in "$prefix"/lib/ucx/*.so*; do [ -L "$m" ] || bundle_deps_of "$m"; done
  fi
fi
# Libraries pulled in by the bundled ones (ldd lists the closure, but a copy may resolve further).
for lib in "${bundled[@]}"; do bundle_deps_of "$prefix/lib/$lib"; done
strip --strip-unneeded "$prefix"/lib/*.so* 2>/dev/null || true

# Nothing the tarball runs may carry a build path or an empty RUNPATH element.
for f in "${elfs[@]}" "$prefix"/lib/*.so* "$prefix"/lib/ucx/*.so*; do
  [ -L "$f" ] && continue
  rp=$(patchelf --print-rpath "$f" 2>/dev/null || true)
  case ":$rp:" in *::*) [ -z "$rp" ] || { echo "package: empty RUNPATH element in $f ($rp)" >&2; exit 1; } ;; esac
  case $rp in *"$build"*|*"$root"*) echo "package: $f has a build path in its RUNPATH ($rp)" >&2; exit 1 ;; esac
done
for path in "$build" "$root"; do
  if grep -rl --binary-files=binary -F "$path/" "$prefix/bin" "$prefix/libexec" "$prefix/lib" >/dev/null 2>&1; then
    echo "package: a path of this checkout ($path) is compiled into: $(grep -rl -F "$path/" "$prefix/bin" "$prefix/libexec" "$prefix/lib" | tr '\n' ' ')" >&2
    exit 1
  fi
done
cat >"$prefix/RELEASE.txt" <<TXT
commbench $version for linux-$arch, built $(date -u +%Y-%m-%d) on $(. /etc/os-release && echo "$PRETTY_NAME")
Bundled in lib/: ${bundled[*]:-(nothing)}
Not bundled (the machine's own): glibc, libstdc++, libgcc_s; CUDA runtime, cuBLAS, NCCL, NVML.
Run from anywhere: bin/commbench --help. GPU acceptance: bin/commbench-gpu-acceptance OUT_DIR (docs/gpu.md).
TXT
tar -C "$stage" -czf "$out/$name.tar.gz" "$name"
echo "package: $out/$name.tar.gz ($(du -h "$out/$name.tar.gz" | cut -f1); bundled ${#bundled[@]} libraries)"

if [ "$deb" = 1 ]; then
  (cd "$build" && cpack -G DEB -B "$out" >/dev/null)
  rm -rf "$out/_CPack_Packages"
  echo "package: $(ls "$out"/commbench_*.deb)"
fi
