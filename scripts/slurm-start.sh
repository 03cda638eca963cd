#!/usr/bin/env bash
# Starts a throwaway single-node Slurm cluster (munge + slurmctld + slurmd, no systemd) for the
# tests, with its state in DIR, and prints the environment that clients need on stdout.
# Usage: eval "$(scripts/slurm-start.sh DIR)"   -> exports SLURM_CONF and MEASURED_SLURM_DIR
# Needs root. Installs slurm-wlm and munge with apt-get when missing. Stop with slurm-stop.sh.
set -euo pipefail
dir=${1:?usage: slurm-start.sh DIR}
if [ "$(id -u)" -ne 0 ]; then
  echo "slurm-start.sh needs root (slurmd runs jobs as their user; munge needs its own account)" >&2
  exit 1
fi
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  echo "installing slurm-wlm and munge with apt-get ..." >&2
  apt-get update -qq >&2 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge >&2
fi
mkdir -p "$dir"/etc "$dir"/log "$dir"/state "$dir"/spool
host=$(hostname -s)

# munge: one daemon per machine; reuse a working one, else start ours (and remember that).
install -d -o munge -g munge -m 755 /run/munge
install -d -o munge -g munge -m 700 /var/log/munge /var/lib/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  if [ ! -s /etc/munge/munge.key ]; then
    mungekey --create --keyfile=/etc/munge/munge.key
    chown munge:munge /etc/munge/munge.key
    chmod 400 /etc/munge/munge.key
  fi
  runuser -u munge -- /usr/sbin/munged --force
  touch "$dir/munged.ours"
  for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
fi
munge -n | unmunge >/dev/null

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ctld_port=$(free_port)
d_port=$(free_port)
mem=$(( $(awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo) - 512 ))
# More CPUs than the machine has: the tests run several single-CPU workers at once.
cat >"$dir/etc/slurm.conf" <<CONF
ClusterName=measuredtest
SlurmctldHost=$host
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SlurmdTimeout=20
MailProg=/bin/true
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
SlurmdParameters=config_overrides
NodeName=$host CPUs=8 RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$dir/etc/slurm.conf
setsid slurmctld -D -i >"$dir/log/ctld.out" 2>&1 </dev/null &
echo $! >"$dir/ctld.pid"
setsid slurmd -D >"$dir/log/d.out" 2>&1 </dev/null &
echo $! >"$dir/d.pid"
for _ in $(seq 300); do
  if sinfo -h -o %T 2>/dev/null | grep -qx idle; then
    echo "export SLURM_CONF='$SLURM_CONF' MEASURED_SLURM_DIR='$dir'"
    exit 0
  fi
  sleep 0.1
done
echo "Slurm did not become idle within 30 s; logs:" >&2
tail -n 20 "$dir"/log/*.out "$dir"/log/*.log >&2 || true
kill "$(cat "$dir/ctld.pid")" "$(cat "$dir/d.pid")" 2>/dev/null || true
exit 1
