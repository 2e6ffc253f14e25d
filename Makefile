# Entry points for developers and CI. `make demo` and `make test` are the two set-up commands: they
# install what they need (Go through its toolchain module, Kubernetes binaries built from source).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

KUBE_VERSION ?= v1.33.13
# Expensive artefacts live outside the clone, keyed by version, so fresh clones reuse them.
SEALION_CACHE ?= $(HOME)/.cache/sealion
export SEALION_CACHE
KUBE_BIN_DIR := $(SEALION_CACHE)/kubernetes/$(KUBE_VERSION)/bin
export SEALION_KUBE_BIN_DIR := $(KUBE_BIN_DIR)

GO ?= go
BIN := $(CURDIR)/bin
FUZZTIME ?= 20s

# Packages whose tests start real processes (etcd, kube-apiserver, our servers).
INTEGRATION_PKGS := ./core/... ./servers/... ./cli/... ./fixtures/...
# The providers' own cluster tests skip unless host changes are allowed. They run one package at a
# time: each compares the host before and after its cluster, and only one cluster fits the host.
PROVIDER_PKGS := ./providers/...

# The cluster providers of `make e2e`, one after the other: kubeadm, gke, eks, aks (simulated
# managed clusters) or existing (the cluster of $$KUBECONFIG).
PROVIDERS ?= kubeadm gke
# Debian packages the providers that run a node on this machine need.
# (chromium: the headless browser of the login tests.)
HOST_PACKAGES := containerd runc containernetworking-plugins iptables conntrack socat ethtool ca-certificates chromium

.PHONY: all
all: build

.PHONY: deps
deps: ## check the toolchain this project needs
	@command -v $(GO) >/dev/null || { echo "Go is required: https://go.dev/dl (any Go >= 1.22 fetches the pinned toolchain itself)"; exit 1; }
	@$(GO) version

.PHONY: build
build: deps ## build our binaries into ./bin
	CGO_ENABLED=0 $(GO) build -o $(BIN)/pinniped-concierge ./servers/concierge
	CGO_ENABLED=0 $(GO) build -o $(BIN)/local-user-authenticator ./servers/local-user-authenticator
	CGO_ENABLED=0 $(GO) build -o $(BIN)/pinniped ./cli/cmd/pinniped

.PHONY: kube-binaries
kube-binaries: deps ## build etcd and the Kubernetes binaries from source into the cache (no-op when warm)
	cd tools && $(GO) run ./kubebuild --version $(KUBE_VERSION) --cache-dir $(SEALION_CACHE)

.PHONY: host-deps
host-deps: ## install the Debian packages that host-based clusters need (only the missing ones)
	@missing=$$(for p in $(HOST_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

.PHONY: images
images: kube-binaries ## build the cluster images (cached per version) and our server image into _output/images
	cd tools && $(GO) run ./images cluster --kube-version $(KUBE_VERSION) --cache-dir $(SEALION_CACHE)
	cd tools && $(GO) run ./images server --repo-root $(CURDIR)

# Host-based clusters change this machine (containerd, kubelet, /etc/kubernetes, iptables), so they
# run only when asked: CI=true, SEALION_ALLOW_HOST_CHANGES=true, or `make e2e ALLOW_HOST_CHANGES=true`.
ifeq ($(ALLOW_HOST_CHANGES),true)
export SEALION_ALLOW_HOST_CHANGES := true
endif
HOST_CHANGES_ALLOWED := $(filter true,$(CI) $(SEALION_ALLOW_HOST_CHANGES))

.PHONY: e2e
e2e: ## end-to-end suites on a real cluster of each of PROVIDERS (needs CI=true or ALLOW_HOST_CHANGES=true)
	@[ -n "$(HOST_CHANGES_ALLOWED)" ] || { echo "make e2e starts a cluster on this machine (containerd, kubelet, /etc/kubernetes, iptables; all removed afterwards): run it with ALLOW_HOST_CHANGES=true"; exit 1; }
	$(MAKE) host-deps images
	for p in $(PROVIDERS); do \
		SEALION_E2E_PROVIDER=$$p SEALION_E2E_LOGS=$(CURDIR)/_output/e2e-logs/$$p $(GO) test -count=1 -timeout 30m -v ./e2e/... \
		|| { echo "e2e on $$p failed: cluster logs in _output/e2e-logs/$$p"; exit 1; }; done

.PHONY: host-deps-if-allowed
host-deps-if-allowed:
	@if [ -n "$(HOST_CHANGES_ALLOWED)" ]; then $(MAKE) host-deps; fi

.PHONY: demo
demo: ## a local kubeadm cluster with the Concierge and a demo user's login; Ctrl-C deletes it (needs ALLOW_HOST_CHANGES=true)
	@[ -n "$(HOST_CHANGES_ALLOWED)" ] || { echo "make demo starts a cluster on this machine (containerd, kubelet, /etc/kubernetes, iptables; all removed when it ends): run it with ALLOW_HOST_CHANGES=true"; exit 1; }
	$(MAKE) host-deps images
	$(GO) run ./e2e/demo --provider $(firstword $(PROVIDERS))

.PHONY: demo-down
demo-down: ## delete a demo cluster left behind
	$(GO) run ./e2e/demo --provider $(firstword $(PROVIDERS)) --down

.PHONY: e2e-if-allowed
e2e-if-allowed:
	@if [ -n "$(HOST_CHANGES_ALLOWED)" ]; then $(MAKE) e2e; else echo "skipping e2e: it needs a cluster on this machine; run make test with ALLOW_HOST_CHANGES=true (CI sets CI=true)"; fi

.PHONY: generate
generate: deps ## regenerate deepcopy, conversion, OpenAPI, clients, listers, informers and CRDs
	bash tools/codegen/update.sh

.PHONY: verify-generate
verify-generate: deps ## fail when generated files are stale
	bash tools/codegen/verify.sh

.PHONY: unit
unit: deps ## unit tests
	$(GO) test -short -count=1 ./...
	cd tools && $(GO) test -short -count=1 ./...
	cd fixtures/dex/server && $(GO) test -short -count=1 ./...

.PHONY: integration
integration: kube-binaries images host-deps-if-allowed ## integration tests against a real etcd and kube-apiserver (they build our servers)
	$(GO) test -count=1 -timeout 20m $(INTEGRATION_PKGS)
	$(GO) test -count=1 -timeout 20m -p 1 $(PROVIDER_PKGS)
	cd tools && $(GO) test -count=1 ./deploycheck/

.PHONY: fuzz
fuzz: deps ## fuzz the token authentication path for a short time
	$(GO) test -run '^$$' -fuzz '^FuzzTokenCredentialRequest$$' -fuzztime $(FUZZTIME) ./core/credential/

.PHONY: test
test: verify-generate unit integration fuzz e2e-if-allowed ## everything CI runs (e2e on PROVIDERS: kubeadm and gke)

.PHONY: bench
bench: kube-binaries ## benchmarks: in-server exchange cost and a load run through the aggregation layer
	$(GO) test -run '^$$' -bench . -benchmem ./core/certauthority/ ./core/credential/
	$(GO) test -count=1 -run '^TestLoad' -v ./servers/concierge/integration/ -load
	$(MAKE) bench-proxy-if-allowed

.PHONY: bench-proxy-if-allowed
bench-proxy-if-allowed:
	@if [ -n "$(HOST_CHANGES_ALLOWED)" ]; then $(MAKE) host-deps images && \
		SEALION_E2E_BENCH=true SEALION_E2E_PROVIDER=gke $(GO) test -count=1 -v -run 'TestImpersonationProxyBenchmark' ./e2e/concierge/; \
	else echo "skipping the impersonation proxy benchmark: it needs a cluster on this machine (ALLOW_HOST_CHANGES=true)"; fi

.PHONY: help
help:
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'
