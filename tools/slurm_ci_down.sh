#!/usr/bin/env bash
# Stop exactly the daemons that slurm_ci_up.sh started, by the PIDs recorded in STATE_DIR
# (never by name).  Safe to call twice, or when up failed half way.
#   tools/slurm_ci_down.sh STATE_DIR
set -uo pipefail
STATE=${1:?usage: slurm_ci_down.sh STATE_DIR}
gone() { case "$(ps -o stat= -p "$1" 2>/dev/null)" in ""|Z*) return 0;; esac; return 1; }
# compute daemon, controller, accounting daemon, its database, then munge
for d in slurmd slurmctld slurmdbd mariadbd munged; do
  f="$STATE/$d.pid"
  [ -s "$f" ] || continue
  pid=$(cat "$f")
  # only signal the PID if it still is that daemon (a stale PID may have been reused)
  if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$d" ]; then
    kill "$pid" 2>/dev/null
    for _ in $(seq 1 100); do gone "$pid" && break; sleep 0.1; done
    if ! gone "$pid"; then
      echo "slurm_ci_down: $d ($pid) ignored SIGTERM for 10 s; sending SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null
      for _ in $(seq 1 50); do gone "$pid" && break; sleep 0.1; done
    fi
    gone "$pid" || { echo "slurm_ci_down: $d ($pid) is still running" >&2; exit 1; }
    echo "slurm_ci_down: stopped $d ($pid)"
  fi
  rm -f "$f"
done
# Our slurm.conf names a controller that no longer runs: every SLURM client call (scontrol, and the
# Snakemake SLURM plugin, which runs `scontrol show config` at import) would retry it for ~10 s.
# Put back the file slurm_ci_up.sh found, or remove ours.
if head -1 /etc/slurm/slurm.conf 2>/dev/null | grep -q '^# written by tools/slurm_ci_up.sh'; then
  if [ -e "$STATE/slurm.conf.orig" ]; then mv -f "$STATE/slurm.conf.orig" /etc/slurm/slurm.conf; else rm -f /etc/slurm/slurm.conf; fi
  echo "slurm_ci_down: restored /etc/slurm/slurm.conf"
fi
exit 0
