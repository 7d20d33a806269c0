// Package fence lets a service that receives raftcron runs refuse the writes of a stale
// scheduler leader and apply each run's effect once.
//
// Every run attempt raftcron dispatches carries a fencing token: unique, strictly
// increasing across the whole cluster, never reused. A leader that was paused or
// partitioned may still send an attempt after a newer leader has dispatched a newer one;
// only the receiver can tell them apart, by refusing any token lower than the highest it
// has already admitted. The same run may also be delivered more than once (a retry after a
// lost reply, a re-dispatch after failover); its idempotency key lets the receiver
// acknowledge the repeat without a second effect.
//
// The pieces:
//
//   - [Run] is what arrives with a run: parsed by [FromHeader], [FromEnv] and
//     [FromMetadata], written by [Run.SetHeader], [Run.Environ] and [Run.Metadata].
//   - [Guard] admits a token only if it is at least the highest seen for its scope
//     ([NewMemoryGuard], [OpenBoltGuard]).
//   - [Dedupe] remembers applied idempotency keys ([NewMemoryDedupe], [NewBoltDedupe]).
//   - [Fence] combines both around an effect; [Middleware] and [UnaryServerInterceptor]
//     put it in front of HTTP and gRPC handlers.
//   - [Keys] sign and verify the X-Raftcron-Signature that nodes started with
//     --fence-key-file put on every dispatch: v2 ([Keys.SignV2], [CanonicalV2]) covers
//     the method, URL and body digest besides the run, v1 only the run. [WithKeys] makes
//     the middleware and interceptor refuse an unsigned or forged request before its
//     token reaches the Guard, v1 only with [WithV1Signatures]; [WithJobs] and
//     [WithURLPrefix] refuse genuine dispatches meant for other services. [Verifier]
//     does the same for exec runs.
//   - [BoltFence.Update] admits the token, checks and records the key, and runs the
//     caller's write in one bbolt transaction: the exactly-once-effect path for services
//     that keep their state in bbolt; package fence/sqlfence does the same for
//     PostgreSQL, MySQL and SQLite (docs/fencing.md).
//
// The package depends only on the standard library, bbolt and gRPC, so any Go service can
// import it without pulling in the scheduler.
package fence
