#!/usr/bin/env bash
# Start a real single-node SLURM cluster (munged + slurmctld + slurmd) on this host, for the CI
# test tests/test_slurm.py.  Needs root; no systemd needed.
#
#   tools/slurm_ci_up.sh STATE_DIR      # start; PIDs and logs go to STATE_DIR
#   WITH_SLURMDBD=1 tools/slurm_ci_up.sh STATE_DIR   # ... with an accounting database
#   tools/slurm_ci_down.sh STATE_DIR    # stop exactly those PIDs
#
# Default: no accounting database, so `sacct` fails: run Snakemake with
# `--slurm-status-command squeue` (MinJobAge below is 3600 s: keep
# --slurm-init-seconds-before-status-checks <= 1200, or the plugin silently falls back to sacct
# and waits forever).  WITH_SLURMDBD=1 also installs and starts MariaDB + slurmdbd (their PIDs
# are recorded too), so `sacct`, the plugin's default status command, works.
# Exit codes: 0 = node idle; 77 = not root / packages cannot be installed (callers skip);
# 1 = the daemons did not come up (error, with the log tails).
# Idempotent: a second call while the daemons recorded in STATE_DIR run just checks the node.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
ACCT=${WITH_SLURMDBD:-0}
STATE=${1:?usage: slurm_ci_up.sh STATE_DIR}
mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd)
say() { echo "slurm_ci_up: $*" >&2; }
alive() { [ -s "$STATE/$1.pid" ] && kill -0 "$(cat "$STATE/$1.pid")" 2>/dev/null; }

[ "$(id -u)" = 0 ] || { say "needs root (it installs packages and starts daemons)"; exit 77; }

# 1. packages (5 small debs; with accounting also slurmdbd + mariadb-server), only if missing
PKGS="slurmctld slurmd slurm-client munge"
[ "$ACCT" = 1 ] && PKGS="$PKGS slurmdbd mariadb-server"
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null \
   || ! command -v sinfo >/dev/null || ! command -v munged >/dev/null \
   || { [ "$ACCT" = 1 ] && { ! command -v slurmdbd >/dev/null || ! command -v mariadbd >/dev/null; }; }; then
  command -v apt-get >/dev/null || { say "slurm is not installed and there is no apt-get"; exit 77; }
  if ! { apt-get update -qq >"$STATE/apt.log" 2>&1 &&
         apt-get install -y -qq --no-install-recommends $PKGS >>"$STATE/apt.log" 2>&1; }; then
    say "cannot install $PKGS with apt-get (see $STATE/apt.log):"
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

# 3a. accounting database (WITH_SLURMDBD=1): MariaDB, then slurmdbd, then the cluster, account and
#     user.  sacctmgr only works once slurm.conf names accounting_storage/slurmdbd, and slurmctld
#     must start after all this.
start_accounting() {
  install -d -o mysql -g root -m 0755 /run/mysqld
  if ! mariadb -e 'select 1' >/dev/null 2>&1; then
    # mariadbd runs as mysql, so its pid file lives in /run/mysqld; it is recorded in STATE below
    rm -f /run/mysqld/mysqld.pid
    setsid /usr/sbin/mariadbd --user=mysql --pid-file=/run/mysqld/mysqld.pid \
      --socket=/run/mysqld/mysqld.sock </dev/null >"$STATE/mariadb.log" 2>&1 &
    for _ in $(seq 1 120); do mariadb -e 'select 1' >/dev/null 2>&1 && break; sleep 0.5; done
    mariadb -e 'select 1' >/dev/null 2>&1 || { say "MariaDB did not start:"; tail -15 "$STATE/mariadb.log" >&2; exit 1; }
    cp /run/mysqld/mysqld.pid "$STATE/mariadbd.pid"
  fi
  mariadb -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
    CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurmpw';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; FLUSH PRIVILEGES;"
  cat > /etc/slurm/slurmdbd.conf <<EOF
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
SlurmUser=root
LogFile=$STATE/slurmdbd.log
PidFile=$STATE/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=slurmpw
StorageLoc=slurm_acct_db
EOF
  chmod 0600 /etc/slurm/slurmdbd.conf          # slurmdbd refuses a world-readable conf
  alive slurmdbd || /usr/sbin/slurmdbd         # forks; pid -> STATE/slurmdbd.pid
  for _ in $(seq 1 120); do sacctmgr -n list cluster >/dev/null 2>&1 && break; sleep 0.5; done
  sacctmgr -n list cluster >/dev/null 2>&1 || { say "slurmdbd did not start:"; tail -15 "$STATE/slurmdbd.log" >&2; exit 1; }
  sacctmgr -i add cluster ci >/dev/null 2>&1 || true      # already there on a rerun
  sacctmgr -i add account ciacct Description=ci Organization=ci >/dev/null 2>&1 || true
  sacctmgr -i add user root Account=ciacct DefaultAccount=ciacct >/dev/null 2>&1 || true
}

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
  # keep a slurm.conf that is not ours; slurm_ci_down.sh puts it back (or removes ours)
  if [ -e /etc/slurm/slurm.conf ] && ! head -1 /etc/slurm/slurm.conf | grep -q '^# written by tools/slurm_ci_up.sh'; then
    cp -p /etc/slurm/slurm.conf "$STATE/slurm.conf.orig"
  fi
  cat > /etc/slurm/slurm.conf <<EOF
# written by tools/slurm_ci_up.sh (CI single-node cluster; state in $STATE)
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
MinJobAge=3600
NodeName=${H} NodeAddr=127.0.0.1 CPUs=${NCPU} RealMemory=${MEM} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  if [ "$ACCT" = 1 ]; then
    sed -i -e 's#^AccountingStorageType=.*#AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost=localhost#' \
           -e 's#^JobAcctGatherType=.*#JobAcctGatherType=jobacct_gather/linux#' /etc/slurm/slurm.conf
    start_accounting
  fi
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
  "$(for d in munged mariadbd slurmdbd slurmctld slurmd; do [ -s "$STATE/$d.pid" ] && printf '%s=%s ' "$d" "$(cat "$STATE/$d.pid")"; done)"
