#!/usr/bin/env bash
# Starts N commbench tasks the way torchrun does (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
# MASTER_ADDR, MASTER_PORT), optionally kills one of them (or, with KILL_WORKER=1, its worker) with SIGKILL (or
# $KILL_SIGNAL) after a delay, waits for
# all, and writes each task's exit code to <dir>/exit-<rank> and the seconds from the kill to
# the last exit to <dir>/after-kill.
# Usage: launch_tasks.sh COMMBENCH DIR N PORT KILL_RANK(-1: none) KILL_AFTER_S -- run args...
set -u
bin=$1 dir=$2 n=$3 port=$4 kill_rank=$5 kill_after=$6
shift 7
pids=()
for ((r = 0; r < n; r++)); do
  RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    "$bin" "$@" >"$dir/task-$r.log" 2>&1 </dev/null &
  pids+=($!)
done
if ((kill_rank >= 0)); then
  sleep "$kill_after"
  victim=${pids[$kill_rank]}
  if [ -n "${KILL_WORKER:-}" ]; then  # the task's worker (its child), not the task itself
    # Only a child running `commbench __worker`: plugin probes are children of the task too.
    parent=$victim victim=
    for ((try = 0; try < 100 && ${#victim} == 0; try++)); do  # up to 10 s for it to start
      for child in $(pgrep -P "$parent"); do
        tr '\0' ' ' <"/proc/$child/cmdline" 2>/dev/null | grep -q ' __worker ' && { victim=$child; break; }
      done
      [ -n "$victim" ] || sleep 0.1
    done
    [ -n "$victim" ] || { echo "launch_tasks.sh: task $kill_rank has no worker to kill" >&2; exit 1; }
  fi
  kill -"${KILL_SIGNAL:-9}" "$victim"
  start=$(date +%s%N)
fi
for ((r = 0; r < n; r++)); do
  wait "${pids[$r]}"
  echo $? >"$dir/exit-$r"
done
if ((kill_rank >= 0)); then
  echo "scale=3; ($(date +%s%N) - $start) / 1000000000" | bc >"$dir/after-kill"
fi
