#!/usr/bin/env bash
# The nccl plugin and bench/nccl_direct link only functions NCCL has had since 2.14, so that they
# load against an older NCCL than the 2.28 they were built with (a pip wheel on a GPU machine);
# newer ones (2.19's ncclMemAlloc and ncclCommRegister, 2.28's ncclAlltoAll, ncclGather,
# ncclScatter) are looked up at run time. A newer function linked by mistake makes the plugin
# fail to load there ("undefined symbol"), which this catches here.
# nccl_symbols_test.sh <file>...
set -euo pipefail
allowed=$(echo " ncclGetVersion ncclGetErrorString ncclGetLastError ncclGetUniqueId ncclCommInitRank ncclCommInitRankConfig
 ncclCommDestroy ncclCommFinalize ncclCommAbort ncclCommGetAsyncError ncclAllReduce ncclAllGather ncclReduceScatter
 ncclBroadcast ncclReduce ncclSend ncclRecv ncclGroupStart ncclGroupEnd " | tr '\n' ' ')
status=0
for f in "$@"; do
  used=$(nm -D --undefined-only "$f" | awk '{print $NF}' | sed 's/@.*//' | grep '^nccl' || true)
  [ -n "$used" ] || { echo "nccl_symbols_test: $f links no NCCL function at all"; status=1; continue; }
  bad=0
  for sym in $used; do
    case $allowed in *" $sym "*) ;; *) echo "nccl_symbols_test: $(basename "$f") links $sym, newer than NCCL 2.14: look it up at run time"; bad=1 ;; esac
  done
  [ "$bad" -eq 0 ] && echo "$(basename "$f"): $(echo $used | wc -w) NCCL functions linked, all from NCCL <= 2.14"
  [ "$bad" -eq 0 ] || status=1
done
exit $status
