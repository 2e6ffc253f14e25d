#!/usr/bin/env bash
# fresh-check: the README's set-up on a clean Debian root, as a new user's machine would run it.
#
# A minimal Debian bookworm (debootstrap --variant=minbase) gets only what the README asks a user to
# bring (Go, make, git, ca-certificates) and a clone of this repository's HEAD; then `make test`
# runs inside it, as root, without CI=true or ALLOW_HOST_CHANGES, so every install step of the
# Makefile has to do its job. Clusters cannot run inside a chroot (kubelet and containerd need the
# host's init, cgroups and network): those tiers are skipped and the report says so.
#
# It runs in a private mount namespace (unshare), so /proc, /sys, /dev and the like mounted into the
# root disappear with it, and every process left in the root is killed at the end.
#
# Usage (root): tools/freshcheck/freshcheck.sh [--caches cold|shared] [--keep] [--target TARGET]
#   --caches cold    (default) nothing from this machine: Go modules and Kubernetes are fetched and
#                    built inside (about 15 minutes more on 2 cores)
#   --caches shared  bind the host's Go module cache and $SEALION_CACHE (Kubernetes builds) into the
#                    root: proves the install steps, not the cold build time
#   --target T       the make target to run (default test)
#   --keep           leave the root in place for a look (removed at the next run)
set -euo pipefail

caches=cold
keep=false
target=test
while [ $# -gt 0 ]; do
	case "$1" in
	--caches) caches=$2; shift 2 ;;
	--keep) keep=true; shift ;;
	--target) target=$2; shift 2 ;;
	*) echo "fresh-check: unknown argument $1" >&2; exit 2 ;;
	esac
done
case "$caches" in cold | shared) ;; *) echo "fresh-check: --caches is cold or shared" >&2; exit 2 ;; esac

repo=$(cd "$(dirname "$0")/../.." && pwd)
cache=${SEALION_CACHE:-$HOME/.cache/sealion}
work=/var/tmp/sealion/fresh-check
root=$work/root
suite=bookworm
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# The pristine root is kept as a tarball: a debootstrap is a minute and always gives the same root.
base=$cache/fresh-check/$suite-minbase.tar

say() { printf '==> fresh-check: %s\n' "$*"; }
[ "$(id -u)" = 0 ] || { echo "fresh-check needs root (debootstrap, chroot, mounts)" >&2; exit 1; }
for tool in debootstrap unshare chroot; do
	command -v $tool >/dev/null || { echo "fresh-check needs $tool (apt-get install debootstrap util-linux coreutils)" >&2; exit 1; }
done
goroot=$(go env GOROOT)

start=$(date +%s)
kill_root_processes() {
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -9 "${p#/proc/}" 2>/dev/null || true
	done
}
cleanup() {
	kill_root_processes
	if [ "$keep" = false ]; then rm -rf --one-file-system "$root"; fi
}
trap cleanup EXIT

kill_root_processes
rm -rf --one-file-system "$root"
mkdir -p "$root" "$(dirname "$base")"
if [ ! -s "$base" ]; then
	say "debootstrap $suite (minbase) from $mirror, kept in $base"
	debootstrap --variant=minbase "$suite" "$work/debootstrap" "$mirror" >"$work/debootstrap.log" 2>&1 ||
		{ tail -20 "$work/debootstrap.log"; exit 1; }
	tar -C "$work/debootstrap" -cf "$base.tmp" . && mv "$base.tmp" "$base"
	rm -rf --one-file-system "$work/debootstrap"
fi
tar -C "$root" -xf "$base"

say "the user's prerequisites: make, git, ca-certificates (apt), Go $(go env GOVERSION) (copied)"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The machine's trust store, as its resolver: a new machine on this network trusts the
# certificates this one does (the Go module proxy's among them), whatever Debian's package lists.
cp /etc/ssl/certs/ca-certificates.crt "$root/machine-ca-certificates.crt"
# Every installed machine has these, written by its installer rather than by a package.
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
echo fresh-check >"$root/etc/hostname"
cp -a "$goroot" "$root/usr/local/go"
say "clone of $(git -C "$repo" rev-parse --short HEAD) ($(git -C "$repo" log -1 --format=%s | cut -c1-60))"
git clone -q "$repo" "$root/src"
[ -z "$(git -C "$repo" status --porcelain)" ] || say "note: uncommitted changes in $repo are not part of the check (it clones HEAD)"

mounts='mount -t proc proc "$R/proc" && mount -t sysfs sys "$R/sys" && mount --rbind /dev "$R/dev" &&
	mount -t tmpfs tmpfs "$R/dev/shm" && mkdir -p "$R/run/netns"'
if [ "$caches" = shared ]; then
	for c in "$(go env GOMODCACHE):/root/go/pkg/mod" "$(go env GOCACHE):/root/.cache/go-build" "$cache:/root/.cache/sealion"; do
		mkdir -p "$root${c#*:}"
		mounts="$mounts && mount --bind '${c%%:*}' \"\$R${c#*:}\""
	done
	say "caches shared with this machine: Go modules, Go build cache, $cache"
else
	say "caches cold: Go modules and Kubernetes are fetched and built inside"
fi

# The commands a new user types, in a shell of the root with Go on PATH; the environment is the
# root's own, nothing of this machine's.
cat >"$root/fresh-check.sh" <<EOF
set -e
apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends make git ca-certificates >/dev/null
cp /machine-ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
cd /src
make $target
EOF

say "make $target inside the root (log: $work/make.log)"
rc=0
R=$root unshare --mount --propagation private bash -c "$mounts && exec chroot \"\$R\" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
	PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/bash /fresh-check.sh" \
	>"$work/make.log" 2>&1 || rc=$?
elapsed=$(($(date +%s) - start))

# What the run proved, from its log: each tier's go test verdicts and what was skipped and why,
# then the time of each stage of make test.
say "result: make $target exited $rc after $((elapsed / 60))m$((elapsed % 60))s (caches $caches)"
grep -E '^(ok|FAIL|---) |^(installing|missing Debian packages|images: wrote|kubebuild: built|skipping|the providers|==> make test: )|^    [a-z-]+ +[0-9]+m[0-9]{2}s$|Error [0-9]' "$work/make.log" |
	sed 's/^/    /' | awk '{ if (length($0) > 160) print substr($0, 1, 157) "..."; else print }' || true
pass=$(grep -c '^ok ' "$work/make.log" || true)
fail=$(grep -c '^FAIL' "$work/make.log" || true)
echo "fresh-check: $pass package runs ok, $fail failed (a package the unit and the integration tier both run counts twice)"
echo "fresh-check: not run inside the root: the end-to-end suites and the providers' cluster tests (a chroot has no init, cgroups or network of its own for a kubelet and containerd); CI runs them with CI=true"
if [ $rc != 0 ]; then
	echo "fresh-check: FAILED; the last lines of $work/make.log:"
	tail -40 "$work/make.log"
fi
exit $rc
