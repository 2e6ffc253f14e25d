#!/usr/bin/env bash
# stages: make test's stages, one make target after the other, each announced and timed, with
# their output shown as it comes (CI keeps it). At the end, or at the first stage that fails, a
# table says where the time went, so a CI log names the stage to make faster, and a failure the
# stage that failed, without searching the log. A stage that an earlier one has made is not made
# again as a later one's prerequisite (make -o), as when make runs them all in one go: integration
# needs release-check, which has run by then.
#
#   stages.sh MAKE STAGE...
#
# MAKE is the make to run each stage with ($(MAKE)). The exit status is the failed stage's.
set -uo pipefail

make=$1
shift
took() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

done_stages=() made=() total=0
summary() {
	echo "==> make test: time by stage"
	for line in "${done_stages[@]}"; do
		printf '    %-24s %s\n' "${line% *}" "$(took "${line##* }")"
	done
	printf '    %-24s %s\n' total "$(took "$total")"
}

for stage in "$@"; do
	echo "==> make $stage"
	start=$(date +%s)
	$make --no-print-directory "${made[@]}" "$stage"
	rc=$?
	secs=$(($(date +%s) - start))
	total=$((total + secs))
	done_stages+=("$stage $secs")
	if [ "$rc" != 0 ]; then
		summary
		echo "==> make test: $stage failed after $(took "$secs") (exit status $rc)"
		exit "$rc"
	fi
	made+=(-o "$stage")
done
summary
