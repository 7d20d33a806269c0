package api

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// kinds names the commands the store saw, in order.
func kinds(cmds []*pb.Command) []string {
	out := make([]string, len(cmds))
	for i, c := range cmds {
		switch k := c.GetKind().(type) {
		case *pb.Command_SetAudit:
			out[i] = "set_audit"
			if k.SetAudit.GetEnableOnly() {
				out[i] += "(enable)"
			}
		case *pb.Command_PutJob:
			out[i] = "put_job"
		case *pb.Command_CancelRun:
			out[i] = "cancel_run"
		default:
			out[i] = "other"
		}
	}
	return out
}

func TestWritesTurnTheAuditTrailOnAndCarryThePrincipal(t *testing.T) {
	store := newFakeStore()
	sw := NewAuditSwitch(store, store, 500, nil, func() time.Time { return testNow })
	svc := NewJobService(Deps{Store: store, Registry: store, Now: func() time.Time { return testNow }, Audit: sw})

	ctx := withPrincipal(testCtx(t), Principal{Name: "alice", Role: pb.AclRole_ACL_ROLE_MANAGEMENT})
	if _, err := svc.ApplyJob(ctx, &pb.ApplyJobRequest{Spec: validSpec("billing")}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.ApplyJob(testCtx(t), &pb.ApplyJobRequest{Spec: validSpec("other")}); err != nil {
		t.Fatal(err)
	}
	cmds := store.proposed()
	if got := kinds(cmds); !slices.Equal(got, []string{"set_audit", "put_job", "put_job"}) {
		t.Fatalf("proposed %v, want the trail switched on once, before the first write", got)
	}
	sa := cmds[0]
	if sa.GetSetAudit().GetLimit() != 500 || sa.GetCaller().GetPrincipal() != fsm.PrincipalSystem {
		t.Fatalf("set_audit %v, want limit 500 by %s", sa, fsm.PrincipalSystem)
	}
	if p := cmds[1].GetCaller().GetPrincipal(); p != "alice" {
		t.Fatalf("first write's principal %q, want alice", p)
	}
	if p := cmds[2].GetCaller().GetPrincipal(); p != Anonymous {
		t.Fatalf("unauthenticated write's principal %q, want %s", p, Anonymous)
	}
}

func TestAuditSwitchOnAFollowerOnlyEnables(t *testing.T) {
	store := newFakeStore()
	lead := &fakeLeadership{}
	sw := NewAuditSwitch(store, store, 500, lead, func() time.Time { return testNow })
	ctx := testCtx(t)

	sw.ensure(ctx)
	store.setAuditLimit(10_000) // the leader's limit reached this node
	sw.ensure(ctx)
	if got := kinds(store.proposed()); !slices.Equal(got, []string{"set_audit(enable)"}) {
		t.Fatalf("follower proposed %v, want only to switch the trail on", got)
	}

	lead.mu.Lock()
	lead.leader = true
	lead.mu.Unlock()
	sw.ensure(ctx)
	sw.ensure(ctx)
	if got := kinds(store.proposed()); !slices.Equal(got, []string{"set_audit(enable)", "set_audit"}) || store.AuditLimit() != 500 {
		t.Fatalf("leader proposed %v (limit now %d), want its own limit once", got, store.AuditLimit())
	}
}

func TestAuditSwitchWaitsAfterARefusal(t *testing.T) {
	store := newFakeStore()
	now := testNow
	sw := NewAuditSwitch(store, store, 500, nil, func() time.Time { return now })
	store.mu.Lock()
	store.applyErr = errBoom // e.g. a voter does not apply command version 2
	store.mu.Unlock()
	ctx := testCtx(t)

	sw.ensure(ctx)
	now = now.Add(auditRetry - time.Second)
	sw.ensure(ctx)
	if n := len(store.proposed()); n != 1 {
		t.Fatalf("%d proposals within the retry interval, want 1", n)
	}
	now = now.Add(time.Second)
	sw.ensure(ctx)
	if n := len(store.proposed()); n != 2 {
		t.Fatalf("%d proposals after the retry interval, want 2", n)
	}
}

func TestAuditRefusalDoesNotHoldUpTheWrite(t *testing.T) {
	store := newFakeStore()
	refuse := NewAuditSwitch(refusingAudit{store}, store, 500, nil, func() time.Time { return testNow })
	svc := NewJobService(Deps{Store: store, Registry: store, Now: func() time.Time { return testNow }, Audit: refuse})
	if _, err := svc.ApplyJob(testCtx(t), &pb.ApplyJobRequest{Spec: validSpec("billing")}); err != nil {
		t.Fatalf("ApplyJob with the trail refused: %v, want the write done", err)
	}
	if got := kinds(store.proposed()); !slices.Equal(got, []string{"put_job"}) {
		t.Fatalf("proposed %v, want the write", got)
	}
}

// refusingAudit refuses set_audit as a cluster with an old voter does.
type refusingAudit struct{ *fakeStore }

func (r refusingAudit) Apply(ctx context.Context, cmd *pb.Command) (*pb.CommandResult, error) {
	if cmd.GetSetAudit() != nil {
		return nil, errBoom
	}
	return r.fakeStore.Apply(ctx, cmd)
}

func TestListAudit(t *testing.T) {
	h := newHarness(t)
	h.store.audit = []*pb.AuditRecord{
		{Seq: 3, Job: "billing", Action: fsm.AuditPause, Principal: "alice"},
		{Seq: 2, Job: "other", Action: fsm.AuditCreate},
		{Seq: 1, Job: "billing", Action: fsm.AuditCreate},
	}
	ctx := testCtx(t)
	got, err := h.audit.ListAudit(ctx, &pb.ListAuditRequest{Job: "billing"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.GetRecords()) != 2 || got.GetRecords()[0].GetPrincipal() != "alice" {
		t.Fatalf("ListAudit(job billing) = %v", got)
	}
	if q := h.store.auditQuery[0]; q.Limit != defaultAuditListLimit || q.Job != "billing" || h.store.barrierCount() != 1 {
		t.Fatalf("query %+v after %d barriers, want the default limit after one barrier", q, h.store.barrierCount())
	}
	if _, err := h.audit.ListAudit(ctx, &pb.ListAuditRequest{Limit: 5000, BeforeSeq: 3, Stale: true}); err != nil {
		t.Fatal(err)
	}
	if q := h.store.auditQuery[1]; q.Limit != maxAuditListLimit || q.Before != 3 || h.store.barrierCount() != 1 {
		t.Fatalf("query %+v after %d barriers, want the cap, the cursor and no barrier for a stale read", q, h.store.barrierCount())
	}

	_, err = h.audit.ListAudit(ctx, &pb.ListAuditRequest{Job: "Not A Name"})
	if fields := badRequestFields(t, wantCode(t, err, codes.InvalidArgument)); !slices.Equal(fields, []string{"job"}) {
		t.Fatalf("violations %v, want job", fields)
	}
}
