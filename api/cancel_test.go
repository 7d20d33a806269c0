package api

import (
	"slices"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestCancelRun(t *testing.T) {
	h := newHarness(t)
	h.store.addRun(&pb.Run{Id: "billing-7", Job: "billing", State: pb.RunState_RUN_STATE_DISPATCHED})
	h.store.addRun(&pb.Run{Id: "billing-3", Job: "billing", State: pb.RunState_RUN_STATE_SUCCEEDED})
	ctx := testCtx(t)

	got, err := h.runs.CancelRun(ctx, &pb.CancelRunRequest{Id: "billing-7"})
	if err != nil {
		t.Fatal(err)
	}
	if r := got.GetRun(); r.GetState() != pb.RunState_RUN_STATE_CANCELLED || r.GetReason() != fsm.ReasonCancelRequested {
		t.Fatalf("CancelRun = %v, want the run CANCELLED (%s)", r, fsm.ReasonCancelRequested)
	}
	cmd := h.store.proposed()[0]
	if cmd.GetCancelRun().GetRunId() != "billing-7" || cmd.GetCaller().GetPrincipal() != Anonymous {
		t.Fatalf("proposed %v, want a cancel of billing-7 by %s", cmd, Anonymous)
	}

	_, err = h.runs.CancelRun(ctx, &pb.CancelRunRequest{Id: "billing-3"})
	wantCode(t, err, codes.FailedPrecondition)
	_, err = h.runs.CancelRun(ctx, &pb.CancelRunRequest{Id: "billing-9"})
	wantCode(t, err, codes.NotFound)
	before := len(h.store.proposed())
	_, err = h.runs.CancelRun(ctx, &pb.CancelRunRequest{})
	if fields := badRequestFields(t, wantCode(t, err, codes.InvalidArgument)); !slices.Equal(fields, []string{"id"}) {
		t.Fatalf("violations %v, want id", fields)
	}
	if len(h.store.proposed()) != before {
		t.Fatal("an invalid cancel reached the store")
	}
}

func TestCancelRunWithoutStoreIsUnimplemented(t *testing.T) {
	svc := NewRunService(Deps{Barrier: newFakeStore(), Ledger: newFakeStore()})
	_, err := svc.CancelRun(testCtx(t), &pb.CancelRunRequest{Id: "billing-7"})
	wantCode(t, err, codes.Unimplemented)
}
