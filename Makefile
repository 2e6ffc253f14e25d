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
INTEGRATION_PKGS := ./core/testing/controlplane/... ./servers/concierge/integration/...

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

.PHONY: kube-binaries
kube-binaries: deps ## build etcd and the Kubernetes binaries from source into the cache (no-op when warm)
	cd tools && $(GO) run ./kubebuild --version $(KUBE_VERSION) --cache-dir $(SEALION_CACHE)

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

.PHONY: integration
integration: kube-binaries ## integration tests against a real etcd and kube-apiserver (they build our servers)
	$(GO) test -count=1 -timeout 20m $(INTEGRATION_PKGS)

.PHONY: fuzz
fuzz: deps ## fuzz the token authentication path for a short time
	$(GO) test -run '^$$' -fuzz '^FuzzTokenCredentialRequest$$' -fuzztime $(FUZZTIME) ./core/credential/

.PHONY: test
test: verify-generate unit integration fuzz ## everything CI runs

.PHONY: bench
bench: kube-binaries ## benchmarks: in-server exchange cost and a load run through the aggregation layer
	$(GO) test -run '^$$' -bench . -benchmem ./core/certauthority/ ./core/credential/
	$(GO) test -count=1 -run '^TestLoad' -v ./servers/concierge/integration/ -load

.PHONY: help
help:
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'
