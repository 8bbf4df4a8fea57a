#!/usr/bin/env bash
# logged.sh LOG COMMAND...: run COMMAND with its stderr in LOG.  If it fails, the log's last
# non-blank line (the one-line cause, e.g. "cached result ... is unreadable; delete it and rerun")
# reaches the terminal too, as "error: <cause> [log: LOG]", and the exit status is kept.  A command
# killed by a signal (status 128 + N) says so instead: its last line is then only progress.
log="$1"
shift
"$@" 2> "$log" && exit 0
code=$?
if [ "$code" -gt 128 ] && [ "$code" -lt 160 ]; then
    echo "error: killed by signal $((code - 128)) ($(kill -l $((code - 128)) 2>/dev/null || echo unknown)); its last line: $(grep -v '^[[:space:]]*$' "$log" | tail -n 1) [log: $log]" >&2
else
    echo "error: $(grep -v '^[[:space:]]*$' "$log" | tail -n 1) [log: $log]" >&2
fi
exit "$code"
