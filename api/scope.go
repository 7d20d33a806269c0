package api

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// A token with a selector sees and changes only the jobs whose labels
// include it. A job outside the scope is answered exactly as a missing one
// (NotFound, same message), so a scoped token cannot even learn that it
// exists; a write whose own labels leave the scope is PermissionDenied,
// since that is about the request, not about other jobs. The FSM enforces
// the scope of writes again, atomically with the write (Command.caller).

// visibleJob is the job as the caller may see it.
func visibleJob(ctx context.Context, reg Registry, name string) (*pb.Job, error) {
	job, err := reg.Job(name)
	if err != nil {
		return nil, statusOf(err)
	}
	if !PrincipalFrom(ctx).sees(job.GetSpec().GetLabels()) {
		return nil, hiddenJob(name)
	}
	return job, nil
}

// hiddenJob reads as the FSM's answer for a missing job.
func hiddenJob(name string) error {
	return status.Errorf(codes.NotFound, "job %q not found", name)
}

// hiddenRun reads as the FSM's answer for a missing run.
func hiddenRun(id string) error {
	return status.Errorf(codes.NotFound, "run %q not found", id)
}

// checkInScope refuses a spec the caller could not see once written.
func checkInScope(ctx context.Context, field string, spec *pb.JobSpec) error {
	p := PrincipalFrom(ctx)
	if p.sees(spec.GetLabels()) {
		return nil
	}
	return status.Errorf(codes.PermissionDenied, "%s: job %q must carry the labels %s of ACL token %q",
		field, spec.GetName(), FormatSelector(p.Selector), p.Name)
}

// scopedLabels is a list query's label selector narrowed to the caller's
// scope; false when the two contradict each other, so nothing matches.
func scopedLabels(ctx context.Context, want map[string]string) (map[string]string, bool) {
	sel := PrincipalFrom(ctx).Selector
	if len(sel) == 0 {
		return want, true
	}
	out := maps.Clone(want)
	if out == nil {
		out = make(map[string]string, len(sel))
	}
	for k, v := range sel {
		if w, ok := out[k]; ok && w != v {
			return nil, false
		}
		out[k] = v
	}
	return out, true
}

// FormatSelector is sel as k=v,... in key order.
func FormatSelector(sel map[string]string) string {
	parts := make([]string, 0, len(sel))
	for _, k := range slices.Sorted(maps.Keys(sel)) {
		parts = append(parts, fmt.Sprintf("%s=%s", k, sel[k]))
	}
	return strings.Join(parts, ",")
}
