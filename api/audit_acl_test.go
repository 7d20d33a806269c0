package api

import (
	"slices"
	"testing"

	"google.golang.org/grpc/codes"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// With ACLs on, a cancel needs a write token and stays in its scope, the
// trail needs a management token, and every write is recorded under the
// name of the token that made it, ACL writes included.
func TestCancelAndAuditUnderACLs(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	billing := map[string]string{"team": "billing"}
	deployer := h.token(t, mgmt, "deployer", pb.AclRole_ACL_ROLE_WRITE, billing)
	reader := h.token(t, mgmt, "reader", pb.AclRole_ACL_ROLE_READ, nil)

	for _, spec := range []*pb.JobSpec{labelled("invoices", billing), labelled("payroll", map[string]string{"team": "hr"})} {
		if _, err := h.jobs.CreateJob(with(ctx, mgmt), &pb.CreateJobRequest{Spec: spec}); err != nil {
			t.Fatalf("CreateJob %s: %v", spec.GetName(), err)
		}
	}
	inScope, err := h.jobs.TriggerJob(with(ctx, deployer), &pb.TriggerJobRequest{Name: "invoices"})
	if err != nil {
		t.Fatalf("TriggerJob in scope: %v", err)
	}
	outside, err := h.jobs.TriggerJob(with(ctx, mgmt), &pb.TriggerJobRequest{Name: "payroll"})
	if err != nil {
		t.Fatalf("TriggerJob: %v", err)
	}

	_, err = h.runs.CancelRun(with(ctx, reader), &pb.CancelRunRequest{Id: inScope.GetRun().GetId()})
	wantCode(t, err, codes.PermissionDenied)
	_, err = h.runs.CancelRun(with(ctx, deployer), &pb.CancelRunRequest{Id: outside.GetRun().GetId()})
	wantCode(t, err, codes.NotFound)
	if _, err := h.runs.CancelRun(with(ctx, deployer), &pb.CancelRunRequest{Id: inScope.GetRun().GetId()}); err != nil {
		t.Fatalf("CancelRun in scope: %v", err)
	}

	_, err = h.audit.ListAudit(with(ctx, deployer), &pb.ListAuditRequest{})
	wantCode(t, err, codes.PermissionDenied)
	got, err := h.audit.ListAudit(with(ctx, mgmt), &pb.ListAuditRequest{})
	if err != nil {
		t.Fatalf("ListAudit: %v", err)
	}
	var trail []string
	for _, r := range got.GetRecords() {
		trail = append(trail, r.GetPrincipal()+" "+r.GetAction()+" "+r.GetJob())
	}
	want := []string{
		"deployer cancel invoices", "bootstrap trigger payroll", "deployer trigger invoices",
		"bootstrap create payroll", "bootstrap create invoices",
		"bootstrap acl_token_create ", "bootstrap acl_token_create ",
		"anonymous acl_bootstrap ", "system audit_limit ",
	}
	if !slices.Equal(trail, want) {
		t.Fatalf("trail, newest first:\n%q\nwant:\n%q", trail, want)
	}
}
