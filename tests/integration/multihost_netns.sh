#!/usr/bin/env bash
# Three "hosts" on one machine: network namespaces cb<id>-h0..h2, each with an interface cb0 on
# 10.77.<id>.1x/24, joined by a bridge in a fourth namespace; two commbench tasks per host,
# torchrun-style variables, the store on host 0's address with a job token. Exit 77 (ctest:
# skipped) when namespaces cannot be created (not root, no CAP_NET_ADMIN). Every namespace and
# link is removed on exit.
# CB_HOST_MONOTONIC_OFFSETS="0 7 -3" (optional) runs host h's tasks in a time namespace whose
# CLOCK_MONOTONIC is shifted by that many seconds (unshare --time): hosts with skewed clocks.
# Each host's tasks also run in a UTS namespace named cb<id>-h<h>, as hosts of a cluster have
# names of their own. CB_RANK_ORDER=cyclic deals ranks round-robin over the hosts (rank = local
# rank × 3 + host, like srun --distribution=cyclic) instead of in blocks.
# Usage: multihost_netns.sh COMMBENCH EXPERIMENT OUT_DIR LOG_DIR
set -u
bin=$1 exp=$2 out=$3 logs=$4
id=$(( $$ % 200 + 20 ))
sw=cb$id-sw
hosts=(cb$id-h0 cb$id-h1 cb$id-h2)
cleanup() {
  for n in "${hosts[@]}" "$sw"; do ip netns del "$n" 2>/dev/null; done
}
trap cleanup EXIT
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to create network namespaces"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: iproute2 (ip) not installed"; exit 77; }
ip netns add "$sw" 2>/dev/null || { echo "SKIP: cannot create network namespaces here"; exit 77; }
ip -n "$sw" link add br0 type bridge && ip -n "$sw" link set br0 up || { echo "SKIP: cannot create a bridge"; exit 77; }
for h in 0 1 2; do
  ns=${hosts[$h]}
  ip netns add "$ns" || exit 1
  ip -n "$sw" link add "p$h" type veth peer name cb0 netns "$ns" || { echo "SKIP: cannot create veth pairs"; exit 77; }
  ip -n "$sw" link set "p$h" master br0 up
  ip -n "$ns" addr add "10.77.$id.1$h/24" dev cb0
  ip -n "$ns" link set cb0 up
  ip -n "$ns" link set lo up
done
unshare -u true 2>/dev/null || { echo "SKIP: cannot create UTS namespaces (unshare -u)"; exit 77; }
mkdir -p "$logs"
read -r -a skew <<< "${CB_HOST_MONOTONIC_OFFSETS:-}"
if [ ${#skew[@]} -gt 0 ]; then
  unshare --time --monotonic 1 true 2>/dev/null || { echo "SKIP: cannot create time namespaces (unshare --time)"; exit 77; }
fi
token="token-$id-$RANDOM$RANDOM$RANDOM"  # the same for every task of the job
pids=()
for h in 0 1 2; do
  for l in 0 1; do
    r=$((h * 2 + l))
    [ "${CB_RANK_ORDER:-block}" = cyclic ] && r=$((l * 3 + h))
    shift_clock=()
    [ -n "${skew[$h]:-}" ] && shift_clock=(unshare --time --monotonic "${skew[$h]}")
    ip netns exec "${hosts[$h]}" unshare -u sh -c 'hostname "$0" && exec "$@"' "${hosts[$h]}" \
      "${shift_clock[@]}" env RANK=$r WORLD_SIZE=6 LOCAL_RANK=$l LOCAL_WORLD_SIZE=2 \
      MASTER_ADDR="10.77.$id.10" MASTER_PORT=29711 COMMBENCH_JOB_TOKEN="$token" \
      "$bin" run "$exp" -o "$out" --quiet >"$logs/task-$r.log" 2>&1 </dev/null &
    pids[$r]=$!
  done
done
rc=0
for r in 0 1 2 3 4 5; do
  wait "${pids[$r]}"
  code=$?
  echo "$code" >"$logs/exit-$r"
  [ "$code" -eq 0 ] || rc=1
done
exit $rc
