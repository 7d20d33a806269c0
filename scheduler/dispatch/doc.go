// Package dispatch delivers committed run attempts to their targets: an
// HTTP webhook or a local process. It is the last step of the fire protocol:
// the scheduler hands it only attempts that Raft has committed with a fresh
// fencing token, and reports the Outcome back through a proposal.
//
// # Outcomes
//
// Every attempt ends in exactly one state, with a one-line Detail and the
// first 4 KiB of output (response body, or combined stdout and stderr):
//
//   - SUCCEEDED: the target did the job — an HTTP status in success_codes
//     (any 2xx when the list is empty), or exit status 0.
//   - FAILED: it did not, or could not be reached or started: another
//     status, a non-zero exit, a transport error ("dial tcp ...: connection
//     refused"), or the target's own timeout ("timeout after 5s"). The job's
//     retry policy may try again with a new token. A target without a
//     timeout still has one: 30 s for a webhook; for a command its job's
//     deadline, or 1 h without one (jobspec.DefaultHTTPTimeout,
//     DefaultExecTimeout). An attempt the node's own policy refused also
//     fails, with Outcome.Reason exec_denied (program not in
//     ExecConfig.Allow, or an env variable it refuses) or egress_denied (an address in HTTPConfig.Egress),
//     and is never retried.
//   - FENCED: the downstream answered 409 Conflict, meaning it has already
//     seen a larger token — a newer attempt exists, so this one is stale.
//     Never retried.
//   - DEADLINE_EXCEEDED: the job's maximum run duration ran out. When the
//     target timeout and the job deadline are equal, the deadline wins.
//   - CANCELLED: the caller cancelled the attempt's context (leadership
//     lost, job deleted, overlap cancel_other); Detail carries the
//     context's cause. An attempt that had already finished keeps its real
//     outcome.
//
// # Delivery
//
// A Pool runs attempts on a fixed number of workers fed by a bounded queue.
// Submit never blocks: when everything is busy it says ErrQueueFull, so the
// scheduler's loop, and every other job's fire time, never waits on a slow
// target. A slow target holds one worker until its own limits end it; size
// the pool for the number of attempts expected to run at once.
//
// The scheduler derives each attempt's context from its leadership context,
// so losing leadership cancels every in-flight request and kills every
// running process group at once. Go cancels derived contexts one after
// another, so an attempt queued at that instant may still start and is then
// cancelled a moment later; the fencing token is what makes that harmless.
//
// HTTP attempts carry X-Raftcron-Fencing-Token, X-Raftcron-Job,
// X-Raftcron-Run-Id, X-Raftcron-Scheduled-At, X-Raftcron-Attempt and
// Idempotency-Key (the same for every attempt of a run), and
// X-Raftcron-Signature when HTTPConfig.Signer is set: v2 over the method,
// the URL as sent, the body's digest and the run once the Signer says every
// node that may lead signs v2 (cluster version 3), v1 over the run before. Redirects are not
// followed, and all attempts share one keep-alive transport; what a
// target's requests have in common (method, parsed URL, body, the job's
// headers) is built once per target, not per attempt. Each address the
// transport dials, after DNS, is checked against HTTPConfig.Egress before
// connect(2). Over https the transport offers HTTP/2 by ALPN; over http it
// speaks HTTP/1.1 only: prior-knowledge h2c cost more CPU per request at
// both ends than HTTP/1.1 in BenchmarkHTTPWave. The reply's body is kept
// only with http.keep_response.
//
// # Processes
//
// Exec attempts run argv directly (no shell unless argv names one) in a
// process group of their own, only if ExecConfig.Allow allows command[0]
// and every variable of the target's env, as ExecConfig.User if set, in / unless the target names a dir, with
// exactly the target's env and the RAFTCRON_* variables (RAFTCRON_SIGNATURE
// too with a Signer). On deadline, timeout or cancel the whole group is
// killed with SIGKILL and reaped before the outcome is reported; when the
// process exits on its own, whatever it left running in its group is killed
// too, so a run never outlives itself. What left the group (setsid, a
// daemon's double fork) is killed as well: each run is in a cgroup of its
// own where the node can make one, and elsewhere the node is a subreaper
// that kills the run's orphans (proc.Containment; the attempt's fencing
// token marks them).
//
// On Linux each child also gets Pdeathsig=SIGKILL, so that a node killed
// with SIGKILL (no chance to clean up) does not leave the job running. Two
// limits apply. First, the kernel sends the signal when the *thread* that
// forked the child exits, and the Go runtime ends threads on its own terms
// (golang/go#27505); the child is therefore started and waited for on a
// goroutine locked to its thread for the child's whole life. Second,
// Pdeathsig reaches only the direct child: grandchildren (a shell script's
// background jobs, for instance) survive the death of a SIGKILLed node and
// are reparented to init, or stay in the run's cgroup until the next node
// or worker that runs commands on the machine starts and kills it. Jobs
// that must not leave descendants behind should exec their final command,
// or run under a supervisor that owns the tree (a systemd scope or a
// container). On other systems there is no Pdeathsig.
package dispatch
