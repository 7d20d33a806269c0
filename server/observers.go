package server

import (
	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// observers lets several parts of the node observe the one FSM (it takes a
// single observer): the scheduler re-plans changed jobs, the run hub feeds
// WatchRuns, the authorizer ends the streams of revoked tokens, the alerter
// sends what was raised. Each is called in order, synchronously from Apply,
// so none may block. They share the runs of a change, which keeps Apply from cloning
// them once per observer: every observer must treat them as read-only (the
// scheduler and the hub only read them).
type observers []fsm.Observer

func (o observers) JobsChanged(from fsm.Origin, names []string) {
	for _, obs := range o {
		obs.JobsChanged(from, names)
	}
}

// AlertsChanged reaches the observers that care (fsm.AlertObserver).
func (o observers) AlertsChanged(from fsm.Origin) {
	for _, obs := range o {
		if ao, ok := obs.(fsm.AlertObserver); ok {
			ao.AlertsChanged(from)
		}
	}
}

func (o observers) RunsChanged(from fsm.Origin, runs []*pb.Run) {
	for _, obs := range o {
		obs.RunsChanged(from, runs)
	}
}

func (o observers) TokensRevoked(from fsm.Origin) {
	for _, obs := range o {
		if to, ok := obs.(fsm.TokenObserver); ok {
			to.TokensRevoked(from)
		}
	}
}
