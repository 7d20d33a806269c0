package api

import (
	"context"
	"slices"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// allowCalendars refuses specs that refer to calendars until the cluster
// runs fsm.CalendarsVersion. Whether the calendars exist, and are in the
// caller's scope, the FSM decides atomically with the write: a calendar
// applied a moment ago may not have reached this node yet.
func (j *jobService) allowCalendars(ctx context.Context, specs ...*pb.JobSpec) error {
	if !slices.ContainsFunc(specs, func(s *pb.JobSpec) bool { return s.GetCalendars() != nil }) {
		return nil
	}
	return allowVersion(ctx, j.store, j.clusterVersion, "calendars", fsm.CalendarsVersion)
}

func specsOf(writes []write) []*pb.JobSpec {
	specs := make([]*pb.JobSpec, len(writes))
	for i, w := range writes {
		specs[i] = w.spec
	}
	return specs
}
