#!/usr/bin/env bash
# Makes the previous release, the one the upgrade test installs before upgrading to this commit,
# as that release made itself: its own tools/release, run in a git worktree of its commit.
#
#   previousrelease.sh VERSION COMMIT REPO_ROOT CACHE_DIR
#
# The artefacts are kept in CACHE_DIR/releases/VERSION-COMMIT and made only when that folder's
# SHA256SUMS do not check; REPO_ROOT/_output/previous-release/VERSION links to it. COMMIT is
# named as well as VERSION because a release's tag must never move: when the tag is in the clone
# it must name COMMIT, and without the tag (a clone that did not fetch tags) COMMIT is enough.
set -euo pipefail

version=$1 commit=$2 repo=$3 cache=$4
say() { echo "previous-release: $*"; }

if ! git -C "$repo" cat-file -e "$commit^{commit}" 2>/dev/null; then
	say "commit $commit of $version is not in $repo (a shallow clone?): fetch it first" >&2
	exit 1
fi
if tagged=$(git -C "$repo" rev-parse -q --verify "refs/tags/$version^{commit}"); then
	if [ "$tagged" != "$commit" ]; then
		say "the tag $version names $tagged, not $commit: a release's tag never moves" >&2
		exit 1
	fi
fi

dir=$cache/releases/$version-$commit
if [ -f "$dir/SHA256SUMS" ] && (cd "$dir" && sha256sum --quiet -c SHA256SUMS); then
	say "$version ($commit) is up to date in $dir"
else
	mkdir -p "$cache/releases"
	tree=$(mktemp -d "$cache/releases/.tree-XXXXXX")
	trap 'git -C "$repo" worktree remove --force "$tree" 2>/dev/null || rm -rf "$tree"' EXIT
	git -C "$repo" worktree add --quiet --detach "$tree" "$commit"
	rm -rf "$dir.partial" "$dir"
	say "making $version at $commit in $dir"
	(cd "$tree/tools" && go run ./release --version "$version" --repo-root "$tree" --out "$dir.partial" --registry "")
	mv "$dir.partial" "$dir"
fi
mkdir -p "$repo/_output/previous-release"
ln -sfn "$dir" "$repo/_output/previous-release/$version"
