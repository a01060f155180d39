#!/usr/bin/env bash
# Installs what commbench needs to build and test, from Debian 12 packages. Does nothing (and
# needs no network) when everything is already there. Why each package is needed: README.md.
set -euo pipefail

packages=(
  cmake g++ ninja-build pkg-config python3
  libtomlplusplus-dev            # experiment files
  libboost-dev libboost-program-options-dev libboost-filesystem-dev  # Boost.DLL, CLI
  nlohmann-json3-dev libfmt-dev  # records and formatting
  libgloo-dev                    # the gloo backend
  libucx-dev ucx-utils           # the ucx backend; ucx_perftest for bench/run_ucx_bench.sh
  openmpi-bin                    # mpirun, to test commbench under a real MPI launcher
  slurmd slurmctld slurm-client munge  # a one-node Slurm cluster for the srun test
  iproute2                       # network namespaces for the multi-host test
  bc procps                      # tests/integration/launch_tasks.sh, process checks
  clang-14 libclang-rt-14-dev    # libFuzzer for the store-protocol fuzz test
  libgtest-dev libgmock-dev      # unit and integration tests
  python3-matplotlib             # commbench report: plots (python/commbench)
  python3-pandas                 # commbench.load() returns a DataFrame (tests/python covers it)
  chromium                       # tests/python/test_browser.py: report.html in a headless browser
  linux-perf                     # profiler = "perf" and its test (docs/observability.md)
  patchelf dpkg-dev              # scripts/package.sh: the relocatable tarball's RUNPATHs; cpack -G DEB
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
