package api

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// The real FSM and node satisfy what the services ask for.
var (
	_ Registry   = (*fsm.FSM)(nil)
	_ RunLedger  = (*fsm.FSM)(nil)
	_ Store      = (*cluster.Node)(nil)
	_ Leadership = (*cluster.Node)(nil)
	_ AuditState = (*fsm.FSM)(nil)
	_ AuditLog   = (*fsm.FSM)(nil)
)

// fsmBarrier is a ReadBarrier that has nothing to wait for.
type fsmBarrier struct{}

func (fsmBarrier) ReadBarrier(context.Context) error { return nil }

func applyCmd(t *testing.T, f *fsm.FSM, index uint64, cmd *pb.Command) *pb.CommandResult {
	t.Helper()
	cmd.ProposedAtUnixNano = testNow.UnixNano()
	data, err := proto.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	res := f.Apply(&raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data}).(*pb.CommandResult)
	if res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
		t.Fatalf("apply %v: %v", cmd, res)
	}
	return res
}

// TestRunHubObservesTheFSM wires the hub as the FSM's observer: a run the
// FSM commits reaches a watcher, and the fence and run reads see it.
func TestRunHubObservesTheFSM(t *testing.T) {
	state := fsm.New()
	hub := NewRunHub()
	state.SetObserver(hub)
	w, cancel := mustSubscribe(t, hub, "billing")
	defer cancel()

	spec := validSpec("billing")
	applyCmd(t, state, 1, &pb.Command{Kind: &pb.Command_PutJob{PutJob: &pb.PutJobCommand{Spec: spec, Mode: pb.PutMode_PUT_MODE_CREATE}}})
	res := applyCmd(t, state, 2, &pb.Command{Kind: &pb.Command_FireBatch{FireBatch: &pb.FireBatchCommand{
		LeaderId: "n1", Term: 1,
		Fires: []*pb.Fire{{Job: "billing", Generation: 1, Kind: pb.FireKind_FIRE_KIND_MANUAL, RequestId: "r1"}},
	}}})
	fire := res.GetFires()[0]
	if !fire.GetAccepted() {
		t.Fatalf("manual fire refused: %v", fire)
	}
	select {
	case r := <-w.ch:
		if r.GetId() != fire.GetRunId() || r.GetKind() != pb.FireKind_FIRE_KIND_MANUAL {
			t.Fatalf("watcher got %v, want run %s", r, fire.GetRunId())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the committed run did not reach the watcher")
	}

	ctx := testCtx(t)
	fence := NewFenceService(Deps{Barrier: fsmBarrier{}, Registry: state})
	if got, err := fence.CheckToken(ctx, &pb.CheckTokenRequest{Job: "billing", Token: fire.GetToken()}); err != nil || !got.GetCurrent() {
		t.Fatalf("CheckToken of the run's token: %v, %v", got, err)
	}
	runs := NewRunService(Deps{Barrier: fsmBarrier{}, Ledger: state, Hub: hub})
	got, err := runs.GetRun(ctx, &pb.GetRunRequest{Id: fire.GetRunId()})
	if err != nil || got.GetRun().GetRequestId() != "r1" {
		t.Fatalf("GetRun: %v, %v", got, err)
	}
}

// TestAuditTrailThroughTheFSM: the first write switches the trail on, every
// write is recorded with its principal, and a cancel of a finished run is
// refused as FailedPrecondition, all against the real FSM.
func TestAuditTrailThroughTheFSM(t *testing.T) {
	state := fsm.New()
	store := &fsmStore{f: state}
	now := func() time.Time { return testNow }
	sw := NewAuditSwitch(store, state, DefaultAuditLimit, nil, now)
	jobs := NewJobService(Deps{Store: store, Registry: state, Now: now, Audit: sw})
	runs := NewRunService(Deps{Barrier: store, Ledger: state, Store: store, Audit: sw})
	audit := NewAuditService(Deps{Barrier: store, AuditLog: state})

	ctx := withPrincipal(testCtx(t), Principal{Name: "alice", Role: pb.AclRole_ACL_ROLE_MANAGEMENT})
	if _, err := jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: validSpec("billing")}); err != nil {
		t.Fatal(err)
	}
	fire := applyCmd(t, state, 100, &pb.Command{Kind: &pb.Command_FireBatch{FireBatch: &pb.FireBatchCommand{
		LeaderId: "n1", Term: 1,
		Fires: []*pb.Fire{{Job: "billing", Generation: 1, Kind: pb.FireKind_FIRE_KIND_MANUAL, RequestId: "r1", Principal: "bob"}},
	}}}).GetFires()[0]
	store.index = 100
	if _, err := runs.CancelRun(ctx, &pb.CancelRunRequest{Id: fire.GetRunId()}); err != nil {
		t.Fatalf("CancelRun of the open run: %v", err)
	}
	_, err := runs.CancelRun(ctx, &pb.CancelRunRequest{Id: fire.GetRunId()})
	wantCode(t, err, codes.FailedPrecondition)

	got, err := audit.ListAudit(ctx, &pb.ListAuditRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var trail []string
	for _, r := range got.GetRecords() {
		trail = append(trail, r.GetPrincipal()+" "+r.GetAction()+" "+r.GetJob())
	}
	want := []string{"alice cancel billing", "bob trigger billing", "alice create billing", "system audit_limit "}
	if !slices.Equal(trail, want) {
		t.Fatalf("trail, newest first: %q, want %q", trail, want)
	}
}
