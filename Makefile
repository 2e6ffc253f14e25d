# Entry points for developers and CI. `make demo` and `make test` are the two set-up commands: they
# install what they need (Go through its toolchain module, Kubernetes binaries built from source).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

# The Go toolchain every module's go.mod asks for (go 1.27.3). A machine's own go command (any Go
# >= 1.21) fetches it from the Go module proxy when told to, once; without this export a machine
# set to GOTOOLCHAIN=local, as this one is, would refuse the modules. Shells outside make need the
# same export (README).
GO_TOOLCHAIN := go1.27.3
export GOTOOLCHAIN := $(GO_TOOLCHAIN)

# The default Kubernetes: the newest minor served in full (providers.DefaultKubernetesVersion, a
# test keeps the two equal), so that matrix-ci's newest minor is this one and CI builds one.
KUBE_VERSION ?= v1.37.2
# Expensive artefacts live outside the clone, keyed by version, so fresh clones reuse them.
SEALION_CACHE ?= $(HOME)/.cache/sealion
export SEALION_CACHE
KUBE_BIN_DIR := $(SEALION_CACHE)/kubernetes/$(KUBE_VERSION)/bin
export SEALION_KUBE_BIN_DIR := $(KUBE_BIN_DIR)

GO ?= go
BIN := $(CURDIR)/bin
FUZZTIME ?= 10s

# Packages whose tests start real processes (etcd, kube-apiserver, our servers, slapd, Chromium):
# those of INTEGRATION_DIRS whose tests -short skips or shortens, as the unit tier has run the
# others' in full. They are the packages whose tests call testing.Short() or start a control
# plane (controlplane.StartForTest, the one helper that calls it, which core's
# TestOnlyStartForTestChecksShort keeps so). Running every package again relinked some 165 test
# binaries for tests already run: 3m33s against 38s on 2 cores.
# (e2e/clilogin needs no cluster: the built CLI against Dex and Chromium.)
INTEGRATION_DIRS := core servers cli fixtures e2e/clilogin matrix/kubeversions
INTEGRATION_PKGS := $(addprefix ./,$(sort $(patsubst %/,%,$(dir $(shell git grep -l -e 'testing.Short()' -e 'controlplane.StartForTest' -- $(foreach d,$(INTEGRATION_DIRS),'$(d)/**_test.go'))))))
# The providers' own cluster tests skip unless host changes are allowed (and fail under CI=true
# when something they need is missing). They run one package at a time: each compares the host
# before and after its cluster, and only one cluster fits the host. kind's runs last, in Docker,
# with the node image make builds for it.
PROVIDER_PKGS := ./providers/kubeadm ./providers/managed/...
KIND_PROVIDER_PKG := ./providers/kind

# The cluster providers of `make e2e`, one after the other: kind (in Docker, what contributors
# use), kubeadm, gke, eks, aks (simulated managed clusters), talos-like (a simulated cluster
# bootstrapped without kubeadm, its proxy behind an Ingress) or existing (the cluster of $$KUBECONFIG).
PROVIDERS ?= kind
# INSTALLED=true runs `make e2e` against the Concierge and Supervisor installed on the cluster of
# $$KUBECONFIG (the existing provider; SEALION_EXISTING_PROFILE says its kind, SEALION_REGISTRY
# where the fixtures' images are pushed): found rather than installed, and left as they are, the
# objects the tests create deleted. `make matrix MATRIX_FLAGS=--installed` runs its cells so.
INSTALLED ?=
ifeq ($(INSTALLED),true)
PROVIDERS := existing
endif
# The cluster of `make demo`: kubeadm needs no Docker.
DEMO_PROVIDER ?= kubeadm
# Debian packages of the programs the integration tests run as plain processes: chromium (the
# headless browser of the login tests), slapd (fixtures/ldap), samba...krb5-user and iproute2 (the
# Active Directory domain controller of fixtures/activedirectory, in a network namespace).
# `make test` installs them (as root, with apt) whether or not host changes are allowed: they add
# programs, they start nothing.
TEST_PACKAGES := ca-certificates iproute2 chromium slapd samba samba-ad-provision samba-dsdb-modules samba-vfs-modules winbind krb5-user
# Debian packages a cluster on this machine needs (installed only when host changes are allowed).
CLUSTER_PACKAGES := containerd runc containernetworking-plugins iptables conntrack socat ethtool iproute2
HOST_PACKAGES := $(TEST_PACKAGES) $(CLUSTER_PACKAGES)
# Debian packages of the unit tests: the race detector (go test -race) needs cgo, hence a C compiler
# and the C library's headers.
UNIT_PACKAGES := gcc libc6-dev
# kind needs a Docker engine (Debian's docker.io), and its node image built here a debootstrap.
KIND_HOST_PACKAGES := docker.io debootstrap
DOCKER_ENGINE := bash tools/dockerengine/dockerd.sh
# The kind provider's node image: empty builds localhost/sealion/kind-node:$(KUBE_VERSION) here
# (make kind-node-image); a published one (kindest/node:<version>) skips the build.
KIND_NODE_IMAGE ?=
ifneq ($(KIND_NODE_IMAGE),)
export SEALION_KIND_NODE_IMAGE := $(KIND_NODE_IMAGE)
endif

.PHONY: all
all: build

# What every tier needs before make can install anything: a fresh Debian machine has these (the
# README's prerequisites); each missing one is named with its Debian package.
DEPS_PROGRAMS := git:git apt-get:apt dpkg-deb:dpkg
DEPS_FILES := /etc/ssl/certs/ca-certificates.crt:ca-certificates

.PHONY: deps
deps: ## check the toolchain and host programs this project needs, naming the package of each missing one
	@command -v $(GO) >/dev/null || { echo "Go is required: https://go.dev/dl (any Go >= 1.21 fetches $(GO_TOOLCHAIN) itself)"; exit 1; }
	@$(GO) version | grep -q ' $(GO_TOOLCHAIN) ' || { echo "the go command runs $$($(GO) version) instead of $(GO_TOOLCHAIN): is GOTOOLCHAIN overridden?"; exit 1; }
	@$(GO) version
	@missing=; for pp in $(DEPS_PROGRAMS); do command -v $${pp%%:*} >/dev/null || missing="$$missing $${pp#*:}"; done; \
	for fp in $(DEPS_FILES); do [ -e $${fp%%:*} ] || missing="$$missing $${fp#*:}"; done; \
	if [ -n "$$missing" ]; then echo "missing Debian packages:$$missing (apt-get install$$missing)"; exit 1; fi

# `pinniped version` shows what these stamp into k8s.io/component-base/version (an unstamped build
# shows what the Go toolchain recorded instead). Only the CLI is stamped: the servers'
# k8s.io/apiserver parses gitVersion as a semantic version, which `git describe` of an untagged
# checkout is not.
VERSION_PKG := k8s.io/component-base/version
CLI_LDFLAGS = -X $(VERSION_PKG).gitVersion=$(shell git describe --tags --always --dirty 2>/dev/null) \
	-X $(VERSION_PKG).gitCommit=$(shell git rev-parse HEAD 2>/dev/null) \
	-X $(VERSION_PKG).buildDate=$(shell date -u +%Y-%m-%dT%H:%M:%SZ)

.PHONY: build
build: deps ## build our binaries into ./bin
	CGO_ENABLED=0 $(GO) build -o $(BIN)/pinniped-concierge ./servers/concierge
	CGO_ENABLED=0 $(GO) build -o $(BIN)/pinniped-supervisor ./servers/supervisor
	CGO_ENABLED=0 $(GO) build -o $(BIN)/local-user-authenticator ./servers/local-user-authenticator
	CGO_ENABLED=0 $(GO) build -ldflags "$(CLI_LDFLAGS)" -o $(BIN)/pinniped ./cli/cmd/pinniped

# The CLI's platforms, as the release builds them. make test type-checks the CLI and its unit
# tests for each (go vet compiles them; only this machine's platform can run them), and builds
# them with the release. -trimpath, as the release builds, lets the two share the compiled
# dependencies of each platform in the build cache.
CLI_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64

.PHONY: verify-cli-platforms
verify-cli-platforms: deps ## type-check the CLI and its unit tests for each of CLI_PLATFORMS
	@for p in $(CLI_PLATFORMS); do echo "go vet ./cli/... for $$p"; \
		CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet -trimpath ./cli/... || exit 1; \
	done

# make release VERSION=v0.1.0 [REGISTRY=registry.example.com/team]: see tools/release.
REGISTRY ?= $(SEALION_REGISTRY)
.PHONY: release
release: deps ## the release of VERSION into _output/release/VERSION: server image (OCI tarball), install YAMLs, Helm charts, CLIs, SHA256SUMS; REGISTRY (default $SEALION_REGISTRY) also pushes the image
	cd tools && $(GO) run ./release --version "$(VERSION)" --repo-root $(CURDIR) --registry "$(REGISTRY)"

# The development release: make test makes it, to prove every artefact builds from a fresh clone,
# and the e2e suites install it as users install a release (e2e/steps.ReleaseVersion names it).
DEV_RELEASE_VERSION := v0.0.0-dev

.PHONY: release-check
release-check: ## the development release (v0.0.0-dev) that the e2e suites install, its SHA256SUMS checked
	$(MAKE) release VERSION=$(DEV_RELEASE_VERSION) REGISTRY=
	cd _output/release/$(DEV_RELEASE_VERSION) && sha256sum --quiet -c SHA256SUMS

.PHONY: kube-binaries
kube-binaries: deps ## build etcd and the Kubernetes binaries from source into the cache (no-op when warm)
	cd tools && $(GO) run ./kubebuild --version $(KUBE_VERSION) --cache-dir $(SEALION_CACHE)

.PHONY: host-deps
host-deps: ## install the Debian packages of HOST_PACKAGES (tests' programs and clusters') that are missing
	@missing=$$(for p in $(HOST_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" != 0 ]; then echo "missing Debian packages:" $$missing "(installing needs root: sudo apt-get install" $$missing")"; exit 1; fi; \
		echo "installing:" $$missing; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# The tests' programs: installed where make can (root), otherwise named, and the tests that need
# them skip (they fail under CI=true).
.PHONY: test-deps
test-deps:
	@if [ "$$(id -u)" = 0 ]; then $(MAKE) --no-print-directory host-deps HOST_PACKAGES="$(TEST_PACKAGES)"; \
	else $(MAKE) --no-print-directory host-deps HOST_PACKAGES="$(TEST_PACKAGES)" || echo "the tests that need them skip"; fi

.PHONY: cluster-images
cluster-images: kube-binaries ## build the cluster images of KUBE_VERSION (cached per version)
	cd tools && $(GO) run ./images cluster --kube-version $(KUBE_VERSION) --cache-dir $(SEALION_CACHE)

.PHONY: images
images: cluster-images ## build the cluster images (cached per version) and the Dex, LDAP and GitHub fixtures' into _output/images (our server image is the release's)
	cd tools && $(GO) run ./images dex --repo-root $(CURDIR)
	cd tools && $(GO) run ./images slapd --repo-root $(CURDIR) --cache-dir $(SEALION_CACHE)
	cd tools && $(GO) run ./images github --repo-root $(CURDIR)

# Host-based clusters change this machine (containerd, kubelet, /etc/kubernetes, iptables), so they
# run only when asked: CI=true, SEALION_ALLOW_HOST_CHANGES=true, or `make e2e ALLOW_HOST_CHANGES=true`.
ifeq ($(ALLOW_HOST_CHANGES),true)
export SEALION_ALLOW_HOST_CHANGES := true
endif
HOST_CHANGES_ALLOWED := $(filter true,$(CI) $(SEALION_ALLOW_HOST_CHANGES))

.PHONY: e2e
e2e: ## end-to-end suites on a real cluster of each of PROVIDERS (needs CI=true or ALLOW_HOST_CHANGES=true), or with INSTALLED=true on what the cluster of KUBECONFIG has installed
	@[ -n "$(HOST_CHANGES_ALLOWED)$(filter true,$(INSTALLED))" ] || { echo "make e2e starts a cluster on this machine (containerd, kubelet, /etc/kubernetes, iptables; all removed afterwards): run it with ALLOW_HOST_CHANGES=true"; exit 1; }
	$(MAKE) $(if $(filter true,$(INSTALLED)),test-deps,host-deps) images release-check
	$(if $(filter kind,$(PROVIDERS)),$(MAKE) $(if $(KIND_NODE_IMAGE),docker-engine,kind-node-image))
	rc=0; for p in $(PROVIDERS); do \
		$(if $(filter true,$(INSTALLED)),SEALION_E2E_INSTALLED=true) SEALION_E2E_PROVIDER=$$p SEALION_E2E_LOGS=$(CURDIR)/_output/e2e-logs/$$p $(GO) test -count=1 -timeout 30m -v ./e2e/conformance/ \
		|| { echo "e2e on $$p failed: cluster logs in _output/e2e-logs/$$p"; rc=1; break; }; done; \
	$(if $(filter kind,$(PROVIDERS)),$(DOCKER_ENGINE) stop;) exit $$rc

# kind clusters run in Docker. Where no init system runs dockerd, make docker-engine starts one by
# hand (make e2e stops it again); kind-node-image builds the node image from our binaries and
# cluster images, for machines that cannot pull kindest/node.
.PHONY: docker-engine
docker-engine: ## unless a Docker engine answers, install docker.io if missing and start dockerd (needs ALLOW_HOST_CHANGES=true)
	@[ -n "$(HOST_CHANGES_ALLOWED)" ] || { echo "make docker-engine installs docker.io and starts dockerd on this machine: run it with ALLOW_HOST_CHANGES=true"; exit 1; }
	@if docker info >/dev/null 2>&1; then echo "docker-engine: an engine answers already; leaving it as it is"; \
	else $(MAKE) host-deps HOST_PACKAGES=docker.io && $(DOCKER_ENGINE) start; fi

.PHONY: docker-engine-stop
docker-engine-stop: ## stop the dockerd make docker-engine started (refuses while containers run)
	$(DOCKER_ENGINE) stop

.PHONY: kind-node-image
kind-node-image: images docker-engine ## build the kind node image localhost/sealion/kind-node:$(KUBE_VERSION) (kept when up to date)
	$(MAKE) host-deps HOST_PACKAGES=debootstrap
	cd tools && $(GO) run ./images kind-node --kube-version $(KUBE_VERSION) --cache-dir $(SEALION_CACHE)

.PHONY: host-deps-if-allowed
host-deps-if-allowed: test-deps
	@if [ -n "$(HOST_CHANGES_ALLOWED)" ]; then $(MAKE) --no-print-directory host-deps HOST_PACKAGES="$(CLUSTER_PACKAGES)"; fi

# make demo prepares only what it runs, each step one line of progress with its time (the steps'
# output goes to _output/demo/logs): the packages of a cluster and of Chromium (its headless
# browser), Kubernetes and the cluster images, the development release for this machine's
# platform alone, the demo program. The full release stays with make release and the test tiers.
DEMO_PACKAGES := ca-certificates chromium $(CLUSTER_PACKAGES)
DEMO_LOGS := $(CURDIR)/_output/demo/logs
PHASE := bash tools/phase/phase.sh $(DEMO_LOGS)

.PHONY: demo-prepare
demo-prepare: ## what make demo prepares before its cluster, each step timed (needs ALLOW_HOST_CHANGES=true: it installs a cluster's packages)
	@[ -n "$(HOST_CHANGES_ALLOWED)" ] || { echo "make demo starts a cluster on this machine (containerd, kubelet, /etc/kubernetes, iptables; all removed when it ends): run it with ALLOW_HOST_CHANGES=true"; exit 1; }
	@rm -rf $(DEMO_LOGS)
	@$(PHASE) "Go $(GO_TOOLCHAIN) and the programs make needs" -- $(MAKE) --no-print-directory deps
	@$(PHASE) "Debian packages of a cluster and of Chromium" -- $(MAKE) --no-print-directory host-deps HOST_PACKAGES="$(DEMO_PACKAGES)"
	@$(PHASE) "Kubernetes $(KUBE_VERSION) and etcd, built from source once" -- $(MAKE) --no-print-directory kube-binaries
	@$(PHASE) "the cluster images" -- $(MAKE) --no-print-directory cluster-images
	@$(PHASE) "the release $(DEV_RELEASE_VERSION) for this machine" -- \
		bash -c 'cd tools && $(GO) run ./release --version $(DEV_RELEASE_VERSION) --repo-root $(CURDIR) --registry "" --platforms linux/$$($(GO) env GOARCH)'
	@$(if $(filter kind,$(DEMO_PROVIDER)),$(PHASE) "Docker and the kind node image" -- $(MAKE) --no-print-directory $(if $(KIND_NODE_IMAGE),docker-engine,kind-node-image))
	@$(PHASE) "the demo program and its dashboard renderer" -- bash -c '$(GO) build -o $(BIN)/demo ./e2e/demo && cd tools && $(GO) build -o $(BIN)/dashboardrender ./dashboardrender'

.PHONY: demo
demo: demo-prepare ## a local cluster (DEMO_PROVIDER, default kubeadm) with the Concierge and a demo user's login; Ctrl-C deletes it (needs ALLOW_HOST_CHANGES=true)
	@rc=0; $(BIN)/demo --provider $(DEMO_PROVIDER) --log $(DEMO_LOGS)/demo.log --dashboard-renderer $(BIN)/dashboardrender || rc=$$?; \
	$(if $(filter kind,$(DEMO_PROVIDER)),$(DOCKER_ENGINE) stop;) exit $$rc

.PHONY: demo-down
demo-down: ## delete a demo cluster left behind
	$(GO) run ./e2e/demo --provider $(DEMO_PROVIDER) --down

# The existing distribution as a cloud provider runs it, proven on a kubeadm cluster of ours: our
# images pushed to a registry on loopback and pulled by digest, Dex, slapd and the GitHub double in
# the cluster, no host fixture; then the matrix against our charts installed with Helm in a user's
# namespaces and API group suffix (matrix --installed), its verdicts those of the normal run whose
# results.json NORMAL_RESULTS names (make test: matrix-ci's), else every login's pass.
NORMAL_RESULTS ?=
.PHONY: cloud-proof
cloud-proof: deps test-deps images release-check ## the existing provider against a kubeadm cluster of ours treated as a cloud (needs ALLOW_HOST_CHANGES=true)
	@if [ -n "$(HOST_CHANGES_ALLOWED)" ]; then $(MAKE) --no-print-directory host-deps HOST_PACKAGES="$(CLUSTER_PACKAGES)"; fi
	SEALION_NORMAL_RESULTS=$(NORMAL_RESULTS) $(GO) test -count=1 -timeout 45m ./e2e/cloudproof/

# docs/quickstart.md as a new user follows it: its commands, verbatim but for the version and the
# registry, on a kubeadm cluster of ours with a registry on loopback (e2e/quickstart). The page
# hashes the password with htpasswd, from apache2-utils.
QUICKSTART_PACKAGES := apache2-utils

.PHONY: quickstart-proof
quickstart-proof: deps ## run docs/quickstart.md's commands on a kubeadm cluster of ours (needs ALLOW_HOST_CHANGES=true)
	$(MAKE) test-deps images
	@if [ -n "$(HOST_CHANGES_ALLOWED)" ]; then $(MAKE) --no-print-directory host-deps HOST_PACKAGES="$(CLUSTER_PACKAGES) $(QUICKSTART_PACKAGES)"; fi
	$(GO) test -count=1 -timeout 30m ./e2e/quickstart/

# The conformance matrix (matrix/catalog.yaml): distributions x the newest Kubernetes minors x
# identity paths, one cluster per distribution and version, each version built when first needed;
# report in _output/matrix. CELLS filters (CELLS='kind/1.33/*'), MATRIX_BUDGET bounds the time
# (MATRIX_BUDGET=50m; groups not started by then are reported as not run).
CELLS ?=
MATRIX_BUDGET ?= 0
# MATRIX_FLAGS are further flags of the matrix command (--shard 2/4 --out DIR, --baseline FILE).
MATRIX_FLAGS ?=
KUBE_MINOR := $(subst v,,$(basename $(KUBE_VERSION)))
# eks joins with the suite and its webhook path only: it is where the CertificateSigningRequest
# strategy falls back to the proxy because nothing signs its certificates (1.5 to 2 minutes).
# The faults and upgrade paths, the costliest (5 to 7 and 3.5 minutes a cell), run on gke alone,
# where they prove most: every fault kubeadm has and the impersonation proxy's own (a pod stopped
# mid-stream, listing and watching through a rollout), and an upgrade whose exchanges go through
# the proxy with the CA read before it. The full matrix runs them on kubeadm too.
MATRIX_CI_CELLS := {kubeadm,gke,talos-like,kind}/$(KUBE_MINOR)/* kubeadm/newest/* eks/$(KUBE_MINOR)/webhook -kubeadm/*/{faults,upgrade}

.PHONY: matrix
matrix: deps ## conformance matrix, every cell or CELLS, report in _output/matrix (clusters on this machine need ALLOW_HOST_CHANGES=true)
	$(MAKE) test-deps
	@if [ -n "$(HOST_CHANGES_ALLOWED)" ]; then $(MAKE) --no-print-directory host-deps HOST_PACKAGES="$(CLUSTER_PACKAGES) $(KIND_HOST_PACKAGES)"; fi
	$(GO) run ./matrix/cmd/matrix --cells '$(CELLS)' --budget $(MATRIX_BUDGET) $(MATRIX_FLAGS)

.PHONY: matrix-ci
matrix-ci: ## the matrix's CI subset: kubeadm, gke, talos-like and kind on KUBE_VERSION's minor, and kubeadm on the newest minor, every identity path (faults and upgrade on gke alone); eks with the suite and the webhook path
	$(MAKE) matrix CELLS='$(MATRIX_CI_CELLS)'

.PHONY: generate
generate: deps ## regenerate deepcopy, conversion, OpenAPI, clients, listers, informers and CRDs
	bash tools/codegen/update.sh

.PHONY: verify-format
verify-format: deps ## fail when a Go file is not as gofmt prints it (the toolchain's own gofmt)
	@out=$$("$$($(GO) env GOROOT)/bin/gofmt" -l $$(git ls-files '*.go')); \
	[ -z "$$out" ] || { echo "not formatted as gofmt prints them (run gofmt -w on them):"; echo "$$out"; exit 1; }

.PHONY: verify-modules
verify-modules: deps ## fail when a module's go.mod or go.sum is not as go mod tidy writes it (tools/ follows the root's versions)
	@for m in $$(git ls-files '*go.mod' | xargs -n1 dirname); do \
		(cd $$m && $(GO) mod tidy -diff >/dev/null) || { echo "$$m: go.mod or go.sum is not tidy: run (cd $$m && go mod tidy)"; exit 1; }; \
	done

.PHONY: verify-generate
verify-generate: deps ## fail when generated files are stale
	bash tools/codegen/verify.sh

.PHONY: unit
unit: deps ## unit tests, with the race detector
	@$(MAKE) --no-print-directory host-deps HOST_PACKAGES="$(UNIT_PACKAGES)"
	$(GO) test -short -race -count=1 ./...
	cd tools && $(GO) test -short -race -count=1 ./...
	cd fixtures/dex/server && $(GO) test -short -race -count=1 ./...

.PHONY: integration
integration: host-deps-if-allowed kube-binaries images release-check ## integration tests against a real etcd and kube-apiserver (they build our servers; the CLI login test runs the release's CLI)
	$(GO) test -count=1 -timeout 20m $(INTEGRATION_PKGS)
	@[ -n "$(HOST_CHANGES_ALLOWED)" ] || echo "the providers' cluster tests ($(PROVIDER_PKGS) $(KIND_PROVIDER_PKG)) skip: they start clusters on this machine; run make test with ALLOW_HOST_CHANGES=true (CI sets CI=true)"
	$(GO) test -count=1 -timeout 20m -p 1 $(PROVIDER_PKGS)
	$(if $(HOST_CHANGES_ALLOWED),$(MAKE) $(if $(KIND_NODE_IMAGE),docker-engine,kind-node-image))
	rc=0; $(GO) test -count=1 -timeout 15m $(KIND_PROVIDER_PKG) || rc=$$?; \
	$(if $(HOST_CHANGES_ALLOWED),$(DOCKER_ENGINE) stop;) exit $$rc
	cd tools && $(GO) test -count=1 ./deploycheck/ ./internal/debpkg/

# Every fuzz target, package:FuzzName, one a line: each parser on a trust boundary. `make fuzz`
# runs them one after the other for FUZZTIME each (about 2.5 minutes for all, plus compiling);
# `go test` runs each over its seeds (f.Add and testdata/fuzz/). New inputs the fuzzer
# finds stay in the Go build cache; commit only seeds and crashers, under the package's testdata/fuzz.
# FUZZMINIMIZETIME bounds the shrinking of each new input: by default go test may spend a minute
# on one, and in a 10 s run of the cache file targets it spent nearly all of it (52 executions).
FUZZMINIMIZETIME ?= 1s
FUZZ_TARGETS := \
	./servers/concierge/internal/credential:FuzzTokenCredentialRequest \
	./servers/concierge/internal/impersonator:FuzzForwardedHeaders \
	./servers/concierge/internal/authenticator/jwt:FuzzJWTClaims \
	./servers/concierge/internal/authenticator/webhook:FuzzTokenReviewResponse \
	./servers/supervisor/internal/oauth:FuzzAuthorizeQuery \
	./servers/supervisor/internal/oauth:FuzzTokenForm \
	./servers/supervisor/internal/oauth:FuzzCallbackQuery \
	./servers/supervisor/internal/oauth/provider:FuzzStateDecode \
	./servers/supervisor/internal/connectors/ldapclient:FuzzFilterValue \
	./servers/supervisor/internal/idtransform:FuzzExpression \
	./cli/pkg/credentialcache:FuzzCacheFile \
	./cli/pkg/sessioncache:FuzzSessionFile \
	./cli/internal/execcredential:FuzzReadInfo \
	./cli/internal/clientconfig:FuzzLoad

.PHONY: fuzz
fuzz: deps ## run every fuzz target for FUZZTIME each
	@set -e; for target in $(FUZZ_TARGETS); do \
		echo "fuzz: $${target##*:} in $${target%%:*}"; \
		$(GO) test -run '^$$' -fuzz "^$${target##*:}\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) "$${target%%:*}/"; \
	done

# Known advisories, checked offline: the golang.org/x/vulndb module (served by the Go module proxy
# like any other) holds every report of the Go vulnerability database as OSV files, and its indexdb
# command turns them into the database govulncheck reads. VULNDB_VERSION is raised on purpose, to
# the newest pseudo-version served (CONTRIBUTING.md). govulncheck fails (exit 3) on an advisory
# whose vulnerable code ours can reach, in a module or in the standard library; those it finds only
# in packages or modules we import without reaching them are listed (-show verbose) and do not
# fail. The Dex fixture (fixtures/dex/server) is left out: the database lists every version of
# github.com/dexidp/dex as affected by GO-2024-2476, fixed in Dex v2.37 long before the pinned
# commit; it is a test upstream, never shipped.
VULNDB_VERSION ?= v0.0.0-20261105234957-e22db6528018
GOVULNCHECK_VERSION := v1.9.0
VULNDB_DIR := $(SEALION_CACHE)/vulndb/$(VULNDB_VERSION)

.PHONY: vulncheck
vulncheck: deps ## fail on a known advisory (as of VULNDB_VERSION) our code reaches, in our modules or the Go standard library; list the unreachable ones
	@if [ ! -e $(VULNDB_DIR)/index/db.json ]; then \
		src=$$(cd / && $(GO) mod download -json golang.org/x/vulndb@$(VULNDB_VERSION) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p'); \
		rm -rf $(VULNDB_DIR).tmp; \
		(cd / && $(GO) run golang.org/x/vulndb/cmd/indexdb@$(VULNDB_VERSION) -vulns $$src/data/osv -out $(VULNDB_DIR).tmp); \
		mv $(VULNDB_DIR).tmp $(VULNDB_DIR); \
	fi
	$(GO) run golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION) -db file://$(VULNDB_DIR) -show verbose ./...
	cd tools && $(GO) run golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION) -db file://$(VULNDB_DIR) -show verbose ./... tool

# make test runs its stages one after the other through tools/phase/stages.sh, which times each
# and prints the times at the end (or at the stage that failed). The end-to-end stages need
# clusters on this machine; cloud-proof takes its verdicts from matrix-ci's results.
TEST_STAGES := verify-format verify-modules vulncheck verify-generate unit verify-cli-platforms release-check integration fuzz bench-short \
	$(if $(HOST_CHANGES_ALLOWED),matrix-ci cloud-proof quickstart-proof)

.PHONY: test
test: ## everything CI runs, each stage timed (the e2e suites, with ALLOW_HOST_CHANGES=true or CI=true: make matrix-ci cloud-proof quickstart-proof)
	@NORMAL_RESULTS=$(CURDIR)/_output/matrix/results.json bash tools/phase/stages.sh "$(MAKE)" $(TEST_STAGES)
	@[ -n "$(HOST_CHANGES_ALLOWED)" ] || echo "make test left out the end-to-end suites (make matrix-ci cloud-proof quickstart-proof): they need clusters on this machine; run make test with ALLOW_HOST_CHANGES=true (CI sets CI=true)"

# make bench: every benchmark, one after the other, into $(BENCH_OUT)/results.txt (the Go benchmark
# format; the run's machine, versions and commit on top), then tools/bench compares each figure with
# the committed baseline and checks the goals, and writes report.md and the plots. It fails on a
# regression of more than 10% beyond the baseline's measured noise. bench-short is its short form,
# in make test: the load tests without the cluster, with short steps, against their own baseline.
# make bench-baseline [BENCH_SHORT=true] measures a baseline: BENCH_RUNS runs on a quiet machine.
BENCH_OUT ?= _output/bench
BENCH_DURATION ?= $(if $(BENCH_SHORT),2s,5s)
# comma is a comma inside $(if ...), whose arguments commas separate.
comma := ,
BENCH_RUNS ?= 3
BENCH_SHORT ?=
BENCH_BASELINE = tools/bench/baseline$(if $(BENCH_SHORT),-short).txt

.PHONY: bench
bench: ## benchmarks with their gate: in-server exchange cost, load through the aggregation layer and the Supervisor, the CSR strategy's issuance, the proxy on a cluster; report in _output/bench
	$(MAKE) bench-run
	$(MAKE) bench-gate

.PHONY: bench-short
bench-short: ## the short form of make bench (part of make test): the load tests, short steps, no cluster
	$(MAKE) bench-run BENCH_SHORT=true
	$(MAKE) bench-gate BENCH_SHORT=true

.PHONY: bench-gate
bench-gate:
	@[ -f $(BENCH_BASELINE) ] || { echo "no baseline to compare with: measure one on a quiet machine (make bench-baseline$(if $(BENCH_SHORT), BENCH_SHORT=true)) and commit $(BENCH_BASELINE)"; exit 1; }
	cd tools && $(GO) run ./bench -baseline ../$(BENCH_BASELINE) $(if $(BENCH_SHORT),,-goals bench/goals.yaml) -out $(abspath $(BENCH_OUT)) $(if $(BENCH_SHORT),-subset) $(abspath $(BENCH_OUT))/results.txt

.PHONY: bench-baseline
bench-baseline: ## measure the baseline of make bench (BENCH_SHORT=true: of bench-short) from BENCH_RUNS runs, into tools/bench
	rm -f $(BENCH_BASELINE).runs
	for i in $$(seq $(BENCH_RUNS)); do $(MAKE) bench-run && cat $(BENCH_OUT)/results.txt >> $(BENCH_BASELINE).runs || exit 1; done
	mv $(BENCH_BASELINE).runs $(BENCH_BASELINE)

.PHONY: bench-run
bench-run: kube-binaries test-deps
	rm -rf $(BENCH_OUT) && mkdir -p $(BENCH_OUT)
	{ echo "commit: $$(git rev-parse --short HEAD)$$(git diff --quiet HEAD || echo -dirty)"; echo "go: $$($(GO) env GOVERSION)"; \
	  echo "kubernetes: $(KUBE_VERSION)"; echo "cores: $$(nproc)"; echo "memory: $$(free -g | awk '/^Mem:/ {print $$2 " GiB"}')"; \
	  echo "form: $(if $(BENCH_SHORT),short,full)"; echo "step: $(BENCH_DURATION)"; } > $(BENCH_OUT)/results.txt
	$(GO) test -run '^$$' -bench . -benchmem $(if $(BENCH_SHORT),-benchtime 20x ./cli/cmd/pinniped/,./core/certauthority/ ./servers/concierge/internal/credential/ ./cli/cmd/pinniped/) | tee -a $(BENCH_OUT)/results.txt
	$(GO) test -count=1 -timeout 30m -v -run '^TestLoad$$' ./servers/concierge/integration/ -load -load-duration $(BENCH_DURATION) $(if $(BENCH_SHORT),,-load-authenticators 1$(comma)10$(comma)100$(comma)1000) | tee -a $(BENCH_OUT)/results.txt
	$(GO) test -count=1 -timeout 30m -v -run '^TestLoad$$' ./servers/supervisor/integration/ -load -load-duration $(BENCH_DURATION) $(if $(BENCH_SHORT),,-load-sessions 100000) | tee -a $(BENCH_OUT)/results.txt
	$(if $(BENCH_SHORT),,$(GO) test -count=1 -timeout 10m -v -run '^TestIssueRate$$' ./servers/concierge/internal/csrsigner/ -load -load-duration $(BENCH_DURATION) | tee -a $(BENCH_OUT)/results.txt)
	$(if $(BENCH_SHORT),,$(MAKE) --no-print-directory bench-proxy-if-allowed | tee -a $(BENCH_OUT)/results.txt)

.PHONY: bench-proxy-if-allowed
bench-proxy-if-allowed:
	@if [ -n "$(HOST_CHANGES_ALLOWED)" ]; then $(MAKE) host-deps images release-check && \
		(cd tools && $(GO) run ./images streamer --repo-root $(CURDIR)) && \
		SEALION_E2E_BENCH=true SEALION_E2E_PROVIDER=gke $(GO) test -count=1 -timeout 45m -v -run 'TestImpersonationProxyBenchmark' ./e2e/conformance/; \
	else echo "skipping the impersonation proxy benchmark: it needs a cluster on this machine (ALLOW_HOST_CHANGES=true)"; fi

# The README's set-up on a clean Debian root (debootstrap, with only Go, make, git and
# ca-certificates added, and a clone of HEAD): make test there, without host changes. Needs root.
# FRESH_CACHES=shared binds this machine's Go and Kubernetes caches in (proves the install steps,
# not the cold build time).
FRESH_CACHES ?= cold

.PHONY: fresh-check
fresh-check: ## make test on a clean Debian root, as a new machine runs it (FRESH_CACHES=cold|shared; needs root)
	$(MAKE) host-deps HOST_PACKAGES=debootstrap
	bash tools/freshcheck/freshcheck.sh --caches $(FRESH_CACHES)

.PHONY: help
help:
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'
