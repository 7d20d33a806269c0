// Package integration runs whole raftcron nodes inside one test process:
// three real Raft members on loopback, each built by package server exactly
// as `raftcron serve` builds it (FSM, cluster node, scheduler, dispatch
// executors, the public gRPC API and the ops port), firing jobs at a
// fenced, de-duplicating HTTP sink that records every delivery. Faults are
// injected through server.Config's test hooks: leaders are stopped or
// crashed, cut off at the transport (cluster.Isolation), an attempt is held
// on the wire, followers restarted on their data. A checker then verifies
// the fire guarantees of DESIGN.md §1 on the recorded history.
//
// The package holds tests only; they run in plain `go test ./...`.
package integration
