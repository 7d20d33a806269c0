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
TEST_TIMEOUT ?= 10m

.PHONY: build test run proto proto-tools lint bench bench-quick clean

build:
	$(GO) build -tags $(TAGS) -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/node

# Unit, in-process cluster, CLI (multi-process) tests, and the seed corpora of
# every fuzz target (go test runs a fuzz target's seeds as ordinary tests).
test: build
	$(GO) vet -tags $(TAGS) ./...
	$(GO) test -tags $(TAGS) -race -count=1 -timeout $(TEST_TIMEOUT) ./...

# A local 3-node cluster, a fenced demo downstream and a job every 2 s; kill
# the leader by the PID it prints; Ctrl-C stops everything.
run: build
	$(BIN) dev

proto-tools:
	GOBIN=$(TOOLS) $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
	GOBIN=$(TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(TOOLS) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GRPC_VERSION)

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
