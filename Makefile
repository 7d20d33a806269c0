# raftcron build. The hashicorpmetrics tag makes hashicorp/raft report through
# hashicorp/go-metrics, which /metrics bridges into Prometheus; every build and
# test uses it.
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
TEST_TIMEOUT ?= 10m
E2E_TIMEOUT  ?= 15m

.PHONY: build test e2e-long run proto proto-tools lint bench bench-quick clean

build:
	$(GO) build -tags $(TAGS) -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/node

# Unit, in-process cluster, CLI (multi-process) tests, the seed corpora of
# every fuzz target (go test runs a fuzz target's seeds as ordinary tests),
# then the end-to-end subset: 3-node kill, pause and partition scenarios and
# the negative controls (partitions in network namespaces when root).
test: build
	$(GO) vet -tags $(TAGS) ./...
	$(GO) vet -tags $(TAGS),e2e ./test/e2e/
	$(GO) vet -tags $(TAGS),failpoints ./...
	$(GO) test -tags $(TAGS) -race -count=1 -timeout $(TEST_TIMEOUT) ./...
	$(GO) test -tags $(TAGS),e2e -count=1 -timeout $(E2E_TIMEOUT) -v -run '^Test(Kill3|Pause3|Partition3|Control.*)$$' ./test/e2e/

# Every end-to-end scenario: also 5 nodes, membership, clock skew, a long mixed run.
e2e-long: build
	$(GO) test -tags $(TAGS),e2e -count=1 -timeout 45m -v -run '^Test(Kill3|Pause3|Partition3|Control.*|Long.*)$$' ./test/e2e/

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

# Go code, the HTTP gateway (routes in proto/raftcron/v1/gateway.yaml) and
# the OpenAPI document api/gateway embeds.
proto: proto-tools
	cd proto && PATH=$(TOOLS):$$PATH buf lint && PATH=$(TOOLS):$$PATH buf generate

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$')); \
	  if [ -n "$$out" ]; then echo "gofmt wants to change:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags $(TAGS) ./...
	@if [ -x $(TOOLS)/buf ]; then cd proto && $(TOOLS)/buf lint; \
	  else echo "buf not installed: run 'make proto-tools' for buf lint"; exit 1; fi

# Benchmarks against a real 3-node loopback cluster (fsync on), plus the Go
# micro benchmarks; results go to bench/results/ (see docs/benchmarks.md).
BENCH_FLAGS ?=

bench: build
	$(GO) run -tags $(TAGS) ./bench/cmd/raftcron-bench -bin $(BIN) -out bench/results $(BENCH_FLAGS)

bench-quick: build
	$(GO) run -tags $(TAGS) ./bench/cmd/raftcron-bench -quick -bin $(BIN) -out bench/results $(BENCH_FLAGS)

clean:
	rm -rf bin
