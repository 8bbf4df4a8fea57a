#!/usr/bin/env bash
# logged.sh LOG COMMAND...: run COMMAND with its stderr in LOG.  If it fails, the log's last
# non-blank line (the one-line cause, e.g. "cached result ... is unreadable; delete it and rerun")
# reaches the terminal too, as "error: <cause> [log: LOG]", and the exit status is kept.
log="$1"
shift
"$@" 2> "$log" && exit 0
code=$?
echo "error: $(grep -v '^[[:space:]]*$' "$log" | tail -n 1) [log: $log]" >&2
exit "$code"
