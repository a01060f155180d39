#!/usr/bin/env bash
# A one-node Slurm cluster for one command: munged, slurmctld and slurmd started from a temporary
# directory (their own key, config, state, ports, pid files), the command run with SLURM_CONF
# pointing there, then every daemon stopped by its pid. Exit 77 (ctest: skipped) when Slurm or
# munge is not installed or the cluster does not come up.
# Usage: slurm_cluster.sh COMMAND ARGS...   (e.g. srun -n 4 --oversubscribe commbench run X)
set -u
for b in munged mungekey slurmctld slurmd srun sinfo; do
  command -v "$b" >/dev/null || { echo "SKIP: $b not installed (Debian slurmd slurmctld slurm-client munge)"; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "SKIP: the test cluster runs its daemons as root"; exit 77; }
tmp=$(mktemp -d /tmp/commbench-slurm-XXXXXX)
stop() {
  for pid in "$tmp/slurmd.pid" "$tmp/slurmctld.pid" "$tmp/munge/munged.pid"; do
    [ -f "$pid" ] && kill "$(cat "$pid")" 2>/dev/null
  done
  sleep 0.5
  for pid in "$tmp/slurmd.pid" "$tmp/slurmctld.pid" "$tmp/munge/munged.pid"; do
    [ -f "$pid" ] && kill -9 "$(cat "$pid")" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap stop EXIT
mkdir -p "$tmp/state" "$tmp/spool" "$tmp/log" "$tmp/munge"
chmod 700 "$tmp/munge"
mungekey --create --keyfile="$tmp/munge/munge.key" >/dev/null 2>&1 || { echo "SKIP: mungekey failed"; exit 77; }
munged --force --key-file="$tmp/munge/munge.key" --socket="$tmp/munge/munge.socket" \
  --pid-file="$tmp/munge/munged.pid" --log-file="$tmp/munge/munged.log" \
  --seed-file="$tmp/munge/munged.seed" || { echo "SKIP: munged does not start"; exit 77; }
host=$(hostname -s)
base=$((17000 + $$ % 2000 * 2))
cat >"$tmp/slurm.conf" <<CONF
ClusterName=commbench
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$tmp/munge/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
SlurmctldPort=$base
SlurmdPort=$((base + 1))
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
CONF
export SLURM_CONF=$tmp/slurm.conf
slurmctld -f "$SLURM_CONF" || { echo "SKIP: slurmctld does not start"; cat "$tmp/log/slurmctld.log"; exit 77; }
slurmd -f "$SLURM_CONF" || { echo "SKIP: slurmd does not start"; cat "$tmp/log/slurmd.log"; exit 77; }
for _ in $(seq 1 150); do
  state=$(sinfo -h -o %T 2>/dev/null | head -1)
  [ "$state" = "idle" ] && break
  sleep 0.2
done
if [ "$state" != "idle" ]; then
  echo "SKIP: the test cluster did not come up (node state '$state')"
  tail -5 "$tmp/log/slurmctld.log" "$tmp/log/slurmd.log"
  exit 77
fi
"$@"
