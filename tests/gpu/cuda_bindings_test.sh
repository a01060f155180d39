#!/usr/bin/env bash
# Every CUDA runtime and cuBLAS function the core binds by name at run time (core/src/device:
# bind_symbol(lib, "name", ...)) exists in the real CUDA 13 libraries of the toolkit here. The
# simulated GPU exports whatever the core asks for, so only this catches a name the real library
# lacks (a versioned _v2 that became plain, a function not in this major) before a GPU run does.
# cuda_bindings_test.sh <source dir> <toolkit lib dir>
set -euo pipefail
src=$1 lib=$2
[ -e "$lib/libcudart.so.13" ] || { echo "cuda_bindings_test: no CUDA 13 toolkit in $lib; skipped"; exit 77; }
status=0
check() {  # SOURCE LIBRARY
  local names exported n=0
  names=$(grep -oP 'bind_symbol\([\w.]+, "\K[A-Za-z0-9_]+' "$src/$1")
  exported=$(nm -D --defined-only "$lib/$2" | awk '{print $3}' | sed 's/@.*//')
  for s in $names; do
    n=$((n + 1))
    grep -qx "$s" <<<"$exported" || { echo "cuda_bindings_test: $1 binds $s, which $2 lacks"; status=1; }
  done
  [ "$n" -gt 0 ] || { echo "cuda_bindings_test: no bind_symbol in $1"; status=1; }
  echo "$1: $n names, checked against $lib/$2"
}
check core/src/device/cuda_runtime.cpp libcudart.so.13
[ -e "$lib/libcublas.so.13" ] && check core/src/device/cublas.cpp libcublas.so.13
exit $status
