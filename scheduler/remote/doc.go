// Package remote is the leader's end of remote workers (DESIGN §14): the
// scheduler hands it committed attempts of jobs with a worker target, and
// it offers them, in batches, to the workers of their pool connected to
// this node over WorkerService.Connect. See DESIGN.md in this directory.
package remote
