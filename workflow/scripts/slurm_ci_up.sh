#!/usr/bin/env bash
# Start a real single-node SLURM cluster (munged + slurmctld + slurmd, no accounting database)
# on this host, for the CI test tests/test_slurm.py.  Needs root; no systemd needed.
#
#   workflow/scripts/slurm_ci_up.sh STATE_DIR      # start; PIDs and logs go to STATE_DIR
#   workflow/scripts/slurm_ci_down.sh STATE_DIR    # stop exactly those PIDs
#
# Without accounting, `sacct` fails, so run Snakemake with `--slurm-status-command squeue`
# (MinJobAge below is 300 s: keep --slurm-init-seconds-before-status-checks <= 100, or the
# plugin silently falls back to sacct and waits forever).
# Exit codes: 0 = node idle; 77 = not root / packages cannot be installed (callers skip);
# 1 = the daemons did not come up (error, with the log tails).
# Idempotent: a second call while the daemons recorded in STATE_DIR run just checks the node.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
STATE=${1:?usage: slurm_ci_up.sh STATE_DIR}
mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd)
say() { echo "slurm_ci_up: $*" >&2; }
alive() { [ -s "$STATE/$1.pid" ] && kill -0 "$(cat "$STATE/$1.pid")" 2>/dev/null; }

[ "$(id -u)" = 0 ] || { say "needs root (it installs packages and starts daemons)"; exit 77; }

# 1. packages (5 small debs), only if missing
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null \
   || ! command -v sinfo >/dev/null || ! command -v munged >/dev/null; then
  command -v apt-get >/dev/null || { say "slurm is not installed and there is no apt-get"; exit 77; }
  if ! { apt-get update -qq >"$STATE/apt.log" 2>&1 &&
         apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge \
           >>"$STATE/apt.log" 2>&1; }; then
    say "cannot install slurmctld slurmd slurm-client munge with apt-get (see $STATE/apt.log):"
    tail -5 "$STATE/apt.log" >&2
    exit 77
  fi
fi

# 2. munge (the package's postinst writes the key; make one if missing).  A munged that already
#    runs is reused and NOT recorded, so the down script leaves it alone.
if [ ! -s /etc/munge/munge.key ]; then
  mungekey --create --force 2>/dev/null \
    || dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
fi
chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key
install -d -o munge -g munge -m 0755 /run/munge
install -d -o munge -g munge -m 0700 /var/log/munge /var/lib/munge
if ! { [ -s /run/munge/munged.pid ] && kill -0 "$(cat /run/munge/munged.pid)" 2>/dev/null; }; then
  runuser -u munge -- /usr/sbin/munged          # forks; pid -> /run/munge/munged.pid
  cp /run/munge/munged.pid "$STATE/munged.pid"
fi
munge -n | unmunge >/dev/null || { say "munge does not work"; exit 1; }

# 3. slurm.conf for one node = this host, written only when no slurmctld of ours runs.
#    NodeName must be `hostname -s`; RealMemory must be <= what slurmd detects (else the node
#    is drained "Low RealMemory"), so take the total minus 1 GB.
if ! alive slurmctld; then
  if scontrol ping 2>/dev/null | grep -q 'is UP'; then
    say "another slurmctld (not started by this script with $STATE) already runs; stop it first"
    exit 1
  fi
  H=$(hostname -s); NCPU=$(nproc); MEM=$(( $(free -m | awk '/^Mem:/{print $2}') - 1024 ))
  install -d /etc/slurm /var/lib/slurm/slurmctld /var/lib/slurm/slurmd
  cat > /etc/slurm/slurm.conf <<EOF
# written by workflow/scripts/slurm_ci_up.sh (CI single-node cluster; state in $STATE)
ClusterName=ci
SlurmctldHost=${H}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CryptoType=crypto/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
# finished jobs stay visible to squeue --states=all for MinJobAge seconds
MinJobAge=300
NodeName=${H} NodeAddr=127.0.0.1 CPUs=${NCPU} RealMemory=${MEM} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  /usr/sbin/slurmctld -c    # forks; -c = clean job state; pid -> $STATE/slurmctld.pid
fi
alive slurmd || /usr/sbin/slurmd -c

# 4. bounded wait for the node to be idle
for _ in $(seq 1 120); do
  sinfo -h -o %t 2>/dev/null | grep -qx idle && break
  sleep 0.5
done
if ! sinfo -h -o %t 2>/dev/null | grep -qx idle; then
  say "the node did not become idle within 60 s; sinfo says:"
  sinfo -N -l >&2 || true
  for f in slurmctld slurmd; do echo "--- tail of $STATE/$f.log" >&2; tail -15 "$STATE/$f.log" >&2 || true; done
  exit 1
fi
echo "slurm_ci_up: node $(hostname -s) idle; pids:" \
  "$(for d in munged slurmctld slurmd; do [ -s "$STATE/$d.pid" ] && printf '%s=%s ' "$d" "$(cat "$STATE/$d.pid")"; done)"
