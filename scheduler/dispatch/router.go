package dispatch

import (
	"context"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// router sends each attempt to the executor for its kind of target.
type router struct {
	http, exec Executor
}

// NewRouter returns an Executor that hands http attempts to h and exec
// attempts to e. An attempt with no target, with both, or whose executor is
// nil fails without being delivered.
func NewRouter(h Executor, e Executor) Executor {
	return &router{http: h, exec: e}
}

func (r *router) Execute(ctx context.Context, a Attempt) Outcome {
	var ex Executor
	var missing string
	switch {
	case a.HTTP != nil && a.Exec != nil:
		return refuse("both http and exec target set")
	case a.Worker != nil:
		// The scheduler hands these to the worker service, never here.
		return refuse("worker target: no executor runs it on the node")
	case a.HTTP != nil:
		ex, missing = r.http, "no http executor"
	case a.Exec != nil:
		ex, missing = r.exec, "no exec executor"
	default:
		return refuse("no target")
	}
	if ex == nil {
		return refuse(missing)
	}
	return ex.Execute(ctx, a)
}

// refuse is the outcome of an attempt that could not be delivered at all.
func refuse(detail string) Outcome {
	now := time.Now()
	return finish(Outcome{StartedAt: now, FinishedAt: now}, pb.RunState_RUN_STATE_FAILED, detail)
}
