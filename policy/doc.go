// Package policy holds what a node allows its jobs to reach: which programs
// exec jobs may run and which environment variables exec and worker jobs
// may set (Exec, Env), and which addresses webhooks may dial (Egress: never
// the node's own ports, the denied ranges unless an allowed range reopens
// them). All are node configuration, not replicated state: every node
// checks its own, so nodes should be started with the same lists.
//
// The API checks Exec when a job is registered; the dispatcher checks both
// again when it delivers an attempt, because the leader that dispatches may
// not be the node that accepted the job. A worker checks its own Exec
// before it runs a command.
package policy
