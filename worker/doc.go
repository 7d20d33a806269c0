// Package worker is raftcron's Go SDK for remote workers, and the runtime
// of `raftcron worker` (DESIGN §14).
//
// A worker holds one gRPC stream to the leader of a raftcron cluster. The
// leader commits every attempt, with its fencing token, before it offers
// it; the worker acknowledges, heartbeats, runs the attempt and reports
// what it came to. A worker that stays silent for the lease the leader
// grants (10 s by default), or whose stream breaks, loses its attempts: the
// leader re-dispatches an at_least_once run to another worker under a
// larger token, and records an at_most_once run unknown. So an attempt may
// run twice, never under the same token: fence the effect on Run.Token and
// de-duplicate on Run.IdempotencyKey (package fence) for an exactly-once
// effect. See examples/fencedworker.
//
// A worker runs two kinds of targets. A handler target (worker.handler in
// the job) calls the HandlerFunc registered under that name, with the
// job's payload. A command target (worker.command) runs a child process,
// as a node's exec target does — no shell, its own process group, killed
// on deadline or cancel and when the worker dies, the first 4 KiB of its
// output kept, the RAFTCRON_* variables plus RAFTCRON_WORKER in its
// environment — but only if the worker's own ExecAllow permits it: a
// cluster cannot make a worker run what its operator did not allow.
//
// Stopping a worker (cancelling Run's context) cancels what it runs; the
// leader re-dispatches those attempts elsewhere.
package worker
