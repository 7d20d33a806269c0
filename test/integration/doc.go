// Package integration runs whole raftcron nodes inside one test process:
// three real Raft members on loopback, each wired as `raftcron serve` wires
// it (FSM, cluster node, scheduler, dispatch executors), firing jobs at a
// fenced, de-duplicating HTTP sink that records every delivery. Faults are
// injected in process: leaders are stopped or crashed, cut off at the
// transport (cluster.Isolation), followers restarted on their data. A
// checker then verifies the fire guarantees of DESIGN.md §1 on the recorded
// history.
//
// The package holds tests only; they run in plain `go test ./...`.
package integration
