//go:build !hashicorpmetrics

package main

// Without the hashicorpmetrics build tag, hashicorp/raft reports to the
// armon/go-metrics global and /metrics carries no raft series at all
// (DESIGN §10), though the build succeeds. So it does not: build with
//
//	go build -tags hashicorpmetrics ./cmd/node   (or make build)
var _ = raftcronNeedsBuildTag_go_build_tags_hashicorpmetrics
