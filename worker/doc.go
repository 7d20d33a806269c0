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
// as a node's exec target does — no shell, in / unless the target names a
// dir, its own process group, killed on deadline or cancel and when the
// worker dies, the first 4 KiB of its output kept, an environment of the
// target's env, the RAFTCRON_* variables (RAFTCRON_SIGNATURE when the
// cluster signs its dispatches) and RAFTCRON_WORKER alone — but only if
// the worker's own ExecAllow permits it and its env sets no variable that
// makes a loader or interpreter run code (unless ExecEnvAllow opens it; the
// rules of a node's --exec-allow and --exec-env-allow, package policy): a
// cluster cannot make a worker run what its operator did not allow, and a
// refused command fails with reason exec_denied, never retried
// (ReasonExecDenied). A worker running as root with commands allowed needs
// ExecUser. A target without a timeout gets the one a
// node's command would: its job's deadline, or an hour.
//
// A handler reports how far it has come with Run.Progress(percent,
// message): the worker sends each attempt's latest report to the leader at
// most once a second, and `raftcron run get`, the JSON API and the web UI
// show it. The stream's heartbeats extend the lease of every attempt the
// worker runs; an attempt the leader no longer holds (its run cancelled, or
// superseded) gets a cancel, which ends the handler's context.
//
// Workers in other languages speak the HTTP protocol of docs/workers.md
// instead, with the same pools, tokens and leases.
//
// Stopping a worker (cancelling Run's context) cancels what it runs; the
// leader re-dispatches those attempts elsewhere.
package worker
