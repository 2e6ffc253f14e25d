#!/usr/bin/env bash
# Regenerates everything derived from the API types in core/apis: deepcopy and conversion
# functions next to the types, OpenAPI definitions of the aggregated groups, the typed clients,
# listers and informers of the Concierge and Supervisor groups, and the CRD manifests.
# The generators are the versions pinned in tools/go.mod. Safe to run repeatedly.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
tools="${root}/tools"
boilerplate="${tools}/codegen/boilerplate.go.txt"
module="sealion.dev"
apis="${root}/core/apis"
generated="${root}/core/generated"

# kube_codegen.sh installs its generators into GOBIN; keep them out of the user's GOBIN.
GOBIN="$(mktemp -d)"
export GOBIN
trap 'rm -rf "${GOBIN}"' EXIT

codegen_dir="$(cd "${tools}" && go mod download -json k8s.io/code-generator | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')"
if [ ! -f "${codegen_dir}/kube_codegen.sh" ]; then
	echo "cannot find kube_codegen.sh of the k8s.io/code-generator pinned in ${tools}/go.mod" >&2
	exit 1
fi
# shellcheck source=/dev/null
source "${codegen_dir}/kube_codegen.sh"

cd "${root}"

# Start the generated trees from scratch so that nothing stale or hand-made survives in them.
rm -rf "${generated}"/{concierge,supervisor,openapi,crds}

echo "Generating deepcopy and conversion functions"
kube::codegen::gen_helpers --boilerplate "${boilerplate}" "${apis}"

echo "Generating OpenAPI definitions of the aggregated API groups"
mkdir -p "${generated}/openapi"
kube::codegen::gen_openapi \
	--boilerplate "${boilerplate}" \
	--output-dir "${generated}/openapi" \
	--output-pkg "${module}/core/generated/openapi" \
	--extra-pkgs k8s.io/api/core/v1 \
	--report-filename "${generated}/openapi/api_rule_violations.list" \
	--output-model-name-file zz_generated.model_name.go \
	--update-report \
	"${apis}"

# The Concierge and the Supervisor each have a group named "config", so each gets its own
# clientset.
for component in concierge supervisor; do
	echo "Generating ${component} clients, listers and informers"
	# gen_client greps these folders for its previous output, so they must exist.
	mkdir -p "${generated}/${component}"/{clientset,listers,informers}
	kube::codegen::gen_client \
		--boilerplate "${boilerplate}" \
		--with-watch \
		--output-dir "${generated}/${component}" \
		--output-pkg "${module}/core/generated/${component}" \
		"${apis}/${component}"
done

echo "Generating CRD manifests"
(cd "${tools}" && go build -o "${GOBIN}/controller-gen" sigs.k8s.io/controller-tools/cmd/controller-gen)
crd_packages=(
	./core/apis/concierge/authentication/v1alpha1
	./core/apis/concierge/config/v1alpha1
	./core/apis/supervisor/config/v1alpha1
	./core/apis/supervisor/idp/v1alpha1
)
paths=()
for pkg in "${crd_packages[@]}"; do
	paths+=("paths=${pkg}")
done
"${GOBIN}/controller-gen" crd:crdVersions=v1 "${paths[@]}" output:crd:dir="${generated}/crds"
# OIDCClient names are client IDs: upstream's CRD accepts only those with its prefix (a name that is
# only the prefix ends in "-", which no object name may).
(cd "${tools}" && go run ./codegen/crdname -pattern '^client\.oauth\.pinniped\.dev-' \
	"${generated}/crds/config.supervisor.pinniped.dev_oidcclients.yaml")

# The Concierge's install manifests and Helm chart ship copies of its CRDs.
echo "Copying the Concierge CRDs into its install manifests"
for dest in servers/concierge/deploy/crds servers/concierge/deploy/chart/files/crds; do
	mkdir -p "${dest}"
	rm -f "${dest}"/*.yaml
	cp "${generated}"/crds/*.concierge.pinniped.dev_*.yaml "${dest}/"
done

echo "Copying the Supervisor CRDs into its install manifests"
for dest in servers/supervisor/deploy/crds servers/supervisor/deploy/chart/files/crds; do
	mkdir -p "${dest}"
	rm -f "${dest}"/*.yaml
	cp "${generated}"/crds/*.supervisor.pinniped.dev_*.yaml "${dest}/"
done

echo "Writing the reference pages (docs/reference) from the CRDs and the API types"
(cd "${tools}" && go run ./docgen --repo-root "${root}")

echo "Writing the charts' Grafana dashboards (files/dashboard.json)"
(cd "${tools}" && go run ./dashboards --repo-root "${root}")
