package api

import (
	"context"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// checkAlerts refuses a job's expect and notify until the cluster runs
// fsm.AlertsVersion, and a notify entry whose channel does not exist, is
// outside the caller's scope, or carries labels the job does not; prefix
// names the spec in a bulk call. The channels are read after the call's
// one barrier.
func (c *secretRefs) checkAlerts(ctx context.Context, prefix string, spec *pb.JobSpec) error {
	if spec.GetExpect() == nil && len(spec.GetNotify()) == 0 {
		return nil
	}
	if err := alertsVersion(c.version, fmt.Sprintf("job %q", spec.GetName())); err != nil {
		return err
	}
	if len(spec.GetNotify()) == 0 {
		return nil
	}
	if c.channels == nil {
		return fieldError(joinField(prefix, "notify"), "this node keeps no channels")
	}
	if err := c.barrierOnce(ctx); err != nil {
		return err
	}
	p := PrincipalFrom(ctx)
	for i, n := range spec.GetNotify() {
		if rule := channelRule(c.channels, p, n.GetChannel(), spec.GetLabels()); rule != "" {
			field := joinField(prefix, fmt.Sprintf("notify[%d].channel", i))
			return badRequest(field+": "+rule, &errdetails.BadRequest_FieldViolation{Field: field, Description: rule})
		}
	}
	return nil
}
