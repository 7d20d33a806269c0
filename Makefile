# raftcron build. The hashicorpmetrics tag makes hashicorp/raft report through
# hashicorp/go-metrics, which /metrics bridges into Prometheus; every build and
# test uses it, and ./cmd/node does not compile without it (build_tag.go).
GO        ?= go
TAGS      := hashicorpmetrics
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
BIN       := bin/raftcron
TOOLS     := $(CURDIR)/bin/tools
BUF_VERSION            := v1.50.0
PROTOC_GEN_GO_VERSION  := v1.36.12
PROTOC_GEN_GRPC_VERSION := v1.5.1
GRPC_GATEWAY_VERSION   := v2.33.0
VTPROTO_VERSION        := v0.6.1-0.20240319094008-0393e58bdf10
TEST_TIMEOUT ?= 10m
E2E_TIMEOUT  ?= 20m

.PHONY: build test clients-test e2e-long run proto proto-tools openapi-tools lint bench bench-quick clean image image-test helm-tool grpcurl-tool

build:
	$(GO) build -tags $(TAGS) -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/node

# Unit, in-process cluster, CLI (multi-process) tests, the seed corpora of
# every fuzz target (go test runs a fuzz target's seeds as ordinary tests),
# then the end-to-end subset: 3-node kill, pause and partition scenarios, the
# same with remote workers, a pool of each SDK's workers (clients/) through a
# worker's and the leader's SIGKILL, and the negative controls (partitions in
# network namespaces when root), the secure cluster (TLS, ACLs, exec and egress
# policy, signed dispatches; grpcurl from `make grpcurl-tool` when present),
# the attacks of the threat model replayed on a loopback and a TLS cluster,
# alerts paged once through a leader killed and another paused (webhook,
# PagerDuty, email over STARTTLS),
# the leader's disk stalled and failing (strace, when root), the recovery of
# a survivor after the quorum is lost, the rolling upgrade from the previous
# release, and the zombie writer per client kit (Go, Python, Node, Java: a
# paused leader's late attempt refused by PostgreSQL; each test builds its
# receiver, with `make -C clients build` for Node and Java), and a pool of
# two workers per SDK (Python, Node, Java) through a worker's and the
# leader's SIGKILL. The OpenAPI
# tools are for the generated-client test (server: a TypeScript client of
# /v1/openapi.json against a real node). A test missing root or a tool
# skips, or fails under CI=true (.ci/run sets it).
test: build openapi-tools
	$(GO) vet -tags $(TAGS) ./...
	$(GO) vet -tags $(TAGS),e2e ./test/e2e/
	$(GO) vet -tags $(TAGS),failpoints ./...
	$(GO) test -tags $(TAGS) -race -count=1 -timeout $(TEST_TIMEOUT) ./...
	$(GO) test -tags $(TAGS),e2e -count=1 -timeout $(E2E_TIMEOUT) -v -run '^Test(Kill3|Pause3|Partition3|Workers.*3|SDKWorkers.*|Secure3|Attacks3|Alerts3|Schedules.*3|DiskStall3|DiskEIO3|Recover3|Upgrade3|Zombie.*|Chains3|Control.*)$$' ./test/e2e/
	$(MAKE) clients-test

# The verification kits under clients/ (Python, Node, Java): unit tests, the
# conformance vectors Go writes, and their SQL fences on a PostgreSQL started
# for them (internal/testdb). The Go SQL fences run in `go test ./...` above,
# on PostgreSQL, MariaDB and SQLite. The worker SDKs' tests start nodes of
# the binary RAFTCRON_BIN names.
clients-test: build
	$(GO) build -o bin/withdb ./internal/testdb/cmd/withdb
	RAFTCRON_BIN=$(CURDIR)/$(BIN) bin/withdb -postgres -- $(MAKE) -C clients test

# Every end-to-end scenario: also 5 nodes, membership, clock skew, a long mixed
# run. CI runs it after `make test`.
e2e-long: build
	$(GO) test -tags $(TAGS),e2e -count=1 -timeout 45m -v -run '^Test(Kill3|Pause3|Partition3|Workers.*3|SDKWorkers.*|Secure3|Attacks3|Alerts3|Schedules.*3|DiskStall3|DiskEIO3|Recover3|Upgrade3|Zombie.*|Chains3|Control.*|Long.*)$$' ./test/e2e/

# A local 3-node cluster, a fenced demo downstream and a job every 2 s; kill
# the leader by the PID it prints; Ctrl-C stops everything.
run: build
	$(BIN) dev

proto-tools:
	GOBIN=$(TOOLS) $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
	GOBIN=$(TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(TOOLS) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GRPC_VERSION)
	GOBIN=$(TOOLS) $(GO) install github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-grpc-gateway@$(GRPC_GATEWAY_VERSION)
	GOBIN=$(TOOLS) $(GO) install github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2@$(GRPC_GATEWAY_VERSION)
	GOBIN=$(TOOLS) $(GO) install github.com/planetscale/vtprotobuf/cmd/protoc-gen-go-vtproto@$(VTPROTO_VERSION)

# Go code, the HTTP gateway (routes in proto/raftcron/v1/gateway.yaml) and
# the OpenAPI 3 document api/gateway embeds: buf writes Swagger 2.0 under
# bin/openapi, which openapigen converts.
proto: proto-tools
	cd proto && PATH=$(TOOLS):$$PATH buf lint && PATH=$(TOOLS):$$PATH buf generate
	cd proto && PATH=$(TOOLS):$$PATH buf generate --template buf.gen.vtproto.yaml
	$(GO) run ./api/gateway/openapigen -in bin/openapi/openapi.swagger.json -out api/gateway/openapi.json

# The OpenAPI linter (@redocly/cli) and the TypeScript client generator
# (openapi-typescript, openapi-fetch, typescript), from the npm registry at
# the versions tools/openapi/package-lock.json pins; node_modules stay
# under bin/, out of the Go module's tree.
OPENAPI_TOOLS := $(TOOLS)/openapi
openapi-tools: $(OPENAPI_TOOLS)/node_modules/.package-lock.json

$(OPENAPI_TOOLS)/node_modules/.package-lock.json: tools/openapi/package.json tools/openapi/package-lock.json
	mkdir -p $(OPENAPI_TOOLS)
	cp tools/openapi/package.json tools/openapi/package-lock.json $(OPENAPI_TOOLS)/
	cd $(OPENAPI_TOOLS) && npm ci --no-audit --no-fund

# gofmt, vet, buf lint, go.mod/go.sum exactly as `go mod tidy` leaves
# them (so a direct dependency is never marked indirect), no compiled
# program among the tracked files (one carries the paths it was built in),
# and the OpenAPI document through Redocly's recommended rules (errors
# fail). Installs buf and the OpenAPI tools on first use, so a fresh clone
# can run it.
lint: $(TOOLS)/buf openapi-tools
	@out=$$(git ls-files -z | xargs -0 grep -l --null-data -m1 -P '^\x7fELF' 2>/dev/null); \
	  if [ -n "$$out" ]; then echo "compiled programs are tracked:"; echo "$$out"; exit 1; fi
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$')); \
	  if [ -n "$$out" ]; then echo "gofmt wants to change:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags $(TAGS) ./...
	cd proto && $(TOOLS)/buf lint
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run 'go mod tidy'"; exit 1; }
	REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
	  $(OPENAPI_TOOLS)/node_modules/.bin/redocly lint --config tools/openapi/redocly.yaml api/gateway/openapi.json

$(TOOLS)/buf:
	GOBIN=$(TOOLS) $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)

# Benchmarks against a real 3-node loopback cluster (fsync on), plus the Go
# micro benchmarks; results go to bench/results/ (see docs/benchmarks.md).
# BENCH_FLAGS go to the bench, e.g.
#   BENCH_FLAGS='-scenarios burst,steady'         a subset
#   BENCH_FLAGS='-repeat 5'                       each scenario 5 times: median [min–max] of every figure
#   BENCH_FLAGS='-repeat 5 -ab OLD/bin/raftcron'  5 pairs old, new, old, new …: paired new − old, new ÷ old
#   BENCH_FLAGS='-profile'                        CPU profiles of the leader and a follower
# docs/benchmarks.md keeps only medians of at least 5 runs and names the machine.
BENCH_FLAGS ?=

bench: build
	$(GO) run -tags $(TAGS) ./bench/cmd/raftcron-bench -bin $(BIN) -out bench/results $(BENCH_FLAGS)

bench-quick: build
	$(GO) run -tags $(TAGS) ./bench/cmd/raftcron-bench -quick -bin $(BIN) -out bench/results $(BENCH_FLAGS)

# The release image from a static binary built here: no network inside the
# image build (deploy/docker/Dockerfile.release). The top-level Dockerfile
# builds from source instead, where a golang base image can be pulled.
IMAGE ?= raftcron/raftcron:latest
CA_BUNDLE ?= /etc/ssl/certs/ca-certificates.crt
image:
	rm -rf bin/image && mkdir -p bin/image/data
	CGO_ENABLED=0 $(GO) build -trimpath -tags $(TAGS) -ldflags '-s -w $(LDFLAGS)' -o bin/image/raftcron ./cmd/node
	cp $(CA_BUNDLE) bin/image/ca-certificates.crt
	docker build -f deploy/docker/Dockerfile.release -t $(IMAGE) bin/image

# Three containers of the image on host networking elect a leader and fire a
# job; needs a running Docker daemon (skips with a message otherwise).
image-test: image build
	RAFTCRON_IMAGE=$(IMAGE) $(GO) test -tags $(TAGS),image -count=1 -v -run '^TestImage' ./deploy/

# helm for the chart's lint and template tests, from the Go module proxy.
HELM_VERSION ?= v3.16.4
helm-tool:
	@[ -x $(TOOLS)/helm ] || GOBIN=$(TOOLS) $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

# grpcurl for the secure end-to-end scenario (TestSecure3 calls the API with
# it over TLS with a bearer token; without it, it leaves that step out, or
# fails under CI=true).
GRPCURL_VERSION ?= v1.9.3
grpcurl-tool:
	@[ -x $(TOOLS)/grpcurl ] || GOBIN=$(TOOLS) $(GO) install github.com/fullstorydev/grpcurl/cmd/grpcurl@$(GRPCURL_VERSION)

clean:
	rm -rf bin
