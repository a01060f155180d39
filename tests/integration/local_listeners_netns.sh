#!/usr/bin/env bash
# A local run inside a fresh network namespace that has an external-looking interface (ext0,
# 10.79.<id>.1/24: a dummy device, or a veth pair) besides loopback. While the run lasts, the namespace's listening
# TCP sockets are sampled every 0.1 s into SAMPLE_DIR/listen4 and SAMPLE_DIR/listen6 (the
# /proc/net/tcp{,6} header and the lines in state LISTEN); the job folder goes under OUT_DIR, the
# run's output to SAMPLE_DIR/run.txt and its exit code to SAMPLE_DIR/exit. Exit 77 (ctest: skipped) when a namespace
# cannot be made (not root, no CAP_NET_ADMIN). The namespace is removed on exit.
# Usage: local_listeners_netns.sh COMMBENCH EXPERIMENT OUT_DIR SAMPLE_DIR
set -u
bin=$1 exp=$2 out=$3 samples=$4
id=$(( $$ % 200 + 20 ))
ns=cbl$id-$$
cleanup() { ip netns del "$ns" 2>/dev/null; }
trap cleanup EXIT
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to create a network namespace"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: iproute2 (ip) not installed"; exit 77; }
ip netns add "$ns" 2>/dev/null || { echo "SKIP: cannot create network namespaces here"; exit 77; }
ip -n "$ns" link set lo up
# A dummy device, or where the kernel has none a veth pair with both ends in the namespace.
if ! ip -n "$ns" link add ext0 type dummy 2>/dev/null; then
  ip -n "$ns" link add ext0 type veth peer name ext1 2>/dev/null || { echo "SKIP: cannot create an interface"; exit 77; }
  ip -n "$ns" link set ext1 up
fi
ip -n "$ns" addr add "10.79.$id.1/24" dev ext0
ip -n "$ns" link set ext0 up
mkdir -p "$out" "$samples"
ip netns exec "$ns" "$bin" run "$exp" -o "$out" --quiet >"$samples/run.txt" 2>&1 </dev/null &
pid=$!
head -1 /proc/net/tcp >"$samples/listen4"
head -1 /proc/net/tcp6 >"$samples/listen6"
while kill -0 "$pid" 2>/dev/null; do
  ip netns exec "$ns" awk '$4 == "0A"' /proc/net/tcp >>"$samples/listen4"
  ip netns exec "$ns" awk '$4 == "0A"' /proc/net/tcp6 >>"$samples/listen6"
  sleep 0.1
done
wait "$pid"
echo $? >"$samples/exit"
exit 0
