#!/usr/bin/env bash
# Starts or stops a Docker engine by hand, for kind clusters on machines where no init system
# runs dockerd (containers, CI virtual machines).
#
#   dockerd.sh start   start dockerd in the background unless an engine answers already;
#                      log in /var/log/sealion/dockerd.log, pid in /run/sealion/dockerd.pid
#   dockerd.sh stop    stop the dockerd that `start` started (an engine started otherwise is
#                      left alone); refuses while containers run
#
# Docker gives privileged containers, such as kind's nodes, every capability it knows. Where this
# machine's capability bounding set lacks some, runc fails on them, so `start` then makes
# runc-wrap (tools/runcwrap, built into the cache) the engine's default runtime, and says so.
#
# The engine leaves the host's firewall, forwarding and bridges alone (no iptables rules, no
# docker0), since it would not remove them when it stops: kind's nodes need none of it on this
# machine. Containers reach the host, the host reaches them on their network's bridge (kind makes
# one and the kind provider removes it), and published ports go through docker-proxy.
set -euo pipefail

pidfile=/run/sealion/dockerd.pid
log=/var/log/sealion/dockerd.log
cache=${SEALION_CACHE:-$HOME/.cache/sealion}
wrapper=$cache/bin/runc-wrap
tools=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

say() { echo "docker-engine: $*"; }

start() {
	if docker info >/dev/null 2>&1; then
		say "an engine answers already; leaving it as it is"
		return
	fi
	command -v dockerd >/dev/null || { say "dockerd is missing: make docker-engine ALLOW_HOST_CHANGES=true installs docker.io"; exit 1; }
	(cd "$tools" && CGO_ENABLED=0 go build -trimpath -o "$wrapper" ./runcwrap)
	local missing args=()
	missing=$("$wrapper" --missing-capabilities)
	if [ -n "$missing" ]; then
		say "this machine's capability bounding set lacks $missing, which privileged containers get:" \
			"the default runtime is runc-wrap ($wrapper), which drops them"
		args+=(--add-runtime "runc-wrap=$wrapper" --default-runtime runc-wrap)
	else
		say "the capability bounding set is complete: the default runtime is runc"
	fi
	mkdir -p "$(dirname "$pidfile")" "$(dirname "$log")"
	args+=(--iptables=false --ip-forward=false --bridge=none)
	setsid nohup dockerd --pidfile "$pidfile" "${args[@]}" >>"$log" 2>&1 </dev/null &
	for _ in $(seq 120); do
		if docker info >/dev/null 2>&1; then
			say "dockerd runs (pid $(cat "$pidfile"), log $log); stop it with make docker-engine-stop"
			return
		fi
		sleep 0.5
	done
	say "dockerd did not answer within 60s; the end of $log:"
	tail -20 "$log"
	exit 1
}

stop() {
	if [ ! -f "$pidfile" ]; then
		say "no dockerd started by make docker-engine runs"
		return
	fi
	local pid running
	pid=$(cat "$pidfile")
	if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" != dockerd ]; then
		say "removing the stale pid file $pidfile"
		rm -f "$pidfile"
		return
	fi
	running=$(docker ps --quiet)
	if [ -n "$running" ]; then
		say "containers still run (kind clusters? delete them first):"
		docker ps --format '  {{.Names}} ({{.Image}})'
		exit 1
	fi
	kill -TERM "$pid"
	for _ in $(seq 60); do
		if ! kill -0 "$pid" 2>/dev/null; then
			say "stopped dockerd (pid $pid)"
			return
		fi
		sleep 0.5
	done
	say "dockerd (pid $pid) did not stop within 30s; see $log"
	exit 1
}

case ${1:-} in
start) start ;;
stop) stop ;;
*) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
