package dispatch

import (
	"time"

	"github.com/raftcron/raftcron/fence"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Reasons of an attempt the node refused by its own policy, in Outcome.Reason and then
// in the run's reason (DESIGN §11; external contract). Such a run fails and is never
// retried: every retry would be refused alike.
const (
	// ReasonExecDenied: the exec job's program is not in this node's --exec-allow, or
	// its env sets a variable the node refuses (--exec-env-allow).
	ReasonExecDenied = "exec_denied"
	// ReasonEgressDenied: the webhook's host resolved into a range of --http-deny.
	ReasonEgressDenied = "egress_denied"
)

// CommandPolicy decides which programs exec attempts may run and which variables their
// env may set (policy.Exec does). Allow returns why command may not run, AllowEnv why
// env may not be set, or nil.
type CommandPolicy interface {
	Allow(command string) error
	AllowEnv(env map[string]string) error
}

// FenceRun is the attempt as the downstream reads it, for signing (here,
// and in the offers to remote workers).
func (a Attempt) FenceRun() fence.Run {
	return fence.Run{
		Token:          a.Token,
		Job:            a.Job,
		RunID:          a.RunID,
		IdempotencyKey: a.IdempotencyKey(),
		ScheduledAt:    a.ScheduledAt.UTC().Truncate(time.Second),
		Attempt:        a.Number,
	}
}

// refusedByPolicy is the outcome of an attempt the node would not deliver.
func refusedByPolicy(o Outcome, reason, detail string) Outcome {
	o = finish(o, pb.RunState_RUN_STATE_FAILED, detail)
	o.Reason = reason
	return o
}
