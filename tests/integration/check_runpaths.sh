#!/usr/bin/env bash
# Every program and shared library of a build tree: no RUNPATH/RPATH entry that is empty or
# relative. The dynamic loader reads such an entry against the current folder, so a library
# planted where the program is started from would be loaded (CMake pads the RUNPATH of installed
# targets with empty entries unless told otherwise: cmake/CommbenchRpath.cmake).
# Usage: check_runpaths.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: check_runpaths.sh BUILD_DIR}
checked=0 bad=0
while IFS= read -r -d '' f; do
  # Only dynamically linked ELF files have a dynamic section to read.
  head -c 4 "$f" 2>/dev/null | grep -q 'ELF' || continue
  dyn=$(readelf -d "$f" 2>/dev/null) || continue
  checked=$((checked + 1))
  while read -r path; do
    IFS=: read -r -a entries <<<"$path"
    # A trailing ':' leaves no array element: count the colons to see it.
    [ "${path: -1}" = ":" ] && entries+=("")
    [ "${path:0:1}" = ":" ] && [ "${#entries[@]}" -gt 0 ] && [ -n "${entries[0]}" ] && entries+=("")
    unsafe=""
    for e in "${entries[@]}"; do
      case $e in
        /* | '$ORIGIN' | '$ORIGIN/'* | '${ORIGIN}'*) ;;
        *) unsafe+="${unsafe:+, }'$e'" ;;
      esac
    done
    if [ -n "$unsafe" ]; then
      echo "$f: RUNPATH [$path] has empty or relative entries ($unsafe): the loader reads them against the current folder" >&2
      bad=$((bad + 1))
    fi
  done < <(sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]$/\2/p' <<<"$dyn")
done < <(find "$build/bin" "$build/lib" "$build/bench" "$build"/test-plugins* "$build/simgpu/lib" \
           -maxdepth 3 -type f -print0 2>/dev/null)
[ "$checked" -gt 0 ] || { echo "check_runpaths: no ELF file found under $build" >&2; exit 1; }
if [ "$bad" -gt 0 ]; then
  echo "check_runpaths: $bad of $checked files have unsafe RUNPATH entries" >&2
  exit 1
fi
echo "check_runpaths: $checked ELF files, every RUNPATH entry absolute or \$ORIGIN-relative"
