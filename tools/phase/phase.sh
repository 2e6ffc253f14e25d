#!/usr/bin/env bash
# phase: one step of a long make target (make demo) shown as one line of progress, its name and,
# once it is over, its time. What the step prints goes to a log of its own, whose end is shown
# only when the step fails; a newcomer sees where the time goes, not a wall of build output.
#
#   phase.sh LOG_DIR NAME -- COMMAND [ARG...]
#
# The log is LOG_DIR/<name as a file name>.log. The exit status is the command's.
set -uo pipefail

logdir=$1 name=$2
shift 2
[ "${1:-}" = -- ] && shift
mkdir -p "$logdir"
slug=$(printf '%s' "$name" | tr -cs 'A-Za-z0-9.' '-' | sed 's/^-*//; s/-*$//' | cut -c1-60)
log=$logdir/$slug.log

printf '==> %s ... ' "$name"
start=$(date +%s)
"$@" >"$log" 2>&1
rc=$?
secs=$(($(date +%s) - start))
took=$(printf '%dm%02ds' $((secs / 60)) $((secs % 60)))
if [ "$rc" = 0 ]; then
	echo "$took"
else
	echo "failed after $took (exit status $rc); the end of $log:"
	tail -n 40 "$log" | sed 's/^/    /'
fi
exit "$rc"
