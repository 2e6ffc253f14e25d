#!/usr/bin/env bash
# Fails, listing the files, when the generated code or CRD manifests are out of date with the API
# types in core/apis. It regenerates with update.sh, compares checksums of every generated file
# before and after, and then puts the original files back, so the tree is left as it was found.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
cd "${root}"

# Every file update.sh writes: the generated trees, zz_generated files next to the types, the
# copies of the Concierge and Supervisor CRDs in their install manifests, the reference pages and
# the charts' dashboards.
generated_files() {
	{
		find core/generated -type f 2>/dev/null || true
		find core/apis -type f -name 'zz_generated.*.go'
		find servers/concierge/deploy/crds servers/concierge/deploy/chart/files/crds servers/supervisor/deploy/crds servers/supervisor/deploy/chart/files/crds -type f -name '*.yaml' 2>/dev/null || true
		echo docs/reference/api.md
		echo docs/reference/conditions.md
		echo docs/reference/config.md
		echo docs/reference/metrics.md
		echo servers/concierge/deploy/chart/files/dashboard.json
		echo servers/supervisor/deploy/chart/files/dashboard.json
	} | LC_ALL=C sort
}

checksums() {
	generated_files | while read -r f; do sha256sum "${f}"; done
}

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT

checksums >"${work}/before"
generated_files | tar -cf "${work}/original.tar" -T -

restore() {
	generated_files | xargs -r rm -f
	tar -xf "${work}/original.tar"
	find core/generated -type d -empty -delete 2>/dev/null || true
}

if ! "${root}/tools/codegen/update.sh" >"${work}/update.log" 2>&1; then
	cat "${work}/update.log" >&2
	restore
	echo "verify-generate: regenerating failed" >&2
	exit 1
fi
checksums >"${work}/after"
restore

stale="$(LC_ALL=C join -a1 -a2 -j2 -o 0,1.1,2.1 -e missing "${work}/before" "${work}/after" | awk '$2 != $3 {print $1}')"
if [ -n "${stale}" ]; then
	echo "verify-generate: these generated files are out of date; run tools/codegen/update.sh:" >&2
	echo "${stale}" | sed 's/^/  /' >&2
	exit 1
fi
echo "verify-generate: generated files are up to date"
