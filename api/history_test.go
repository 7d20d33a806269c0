package api

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// oldJobRuns runs a job of team billing twice — the first run finished
// with output, the second still in flight — and deletes it, as a
// management token would. It returns the two runs.
func oldJobRuns(t *testing.T, h *aclHarness, admin context.Context) (finished, open *pb.Run) {
	t.Helper()
	billing := map[string]string{"team": "billing"}
	if _, err := h.jobs.CreateJob(admin, &pb.CreateJobRequest{Spec: labelled("report", billing)}); err != nil {
		t.Fatal(err)
	}
	trigger := func(rid string) *pb.Run {
		resp, err := h.jobs.TriggerJob(admin, &pb.TriggerJobRequest{Name: "report", RequestId: rid})
		if err != nil {
			t.Fatalf("TriggerJob: %v", err)
		}
		return resp.GetRun()
	}
	finished = trigger("old-1")
	res, err := h.store.Apply(admin, &pb.Command{Kind: &pb.Command_CompleteBatch{CompleteBatch: &pb.CompleteBatchCommand{
		Completions: []*pb.Completion{{
			RunId: finished.GetId(), Token: fsm.CurrentAttempt(finished).GetToken(), Outcome: pb.RunState_RUN_STATE_SUCCEEDED,
			StartedAtUnixNano: testNow.UnixNano(), FinishedAtUnixNano: testNow.UnixNano(), Output: []byte("payroll of the old job"),
		}},
	}}})
	if err != nil || !res.GetCompletions()[0].GetAccepted() {
		t.Fatalf("complete: %v, %v", res, err)
	}
	open = trigger("old-2")
	if _, err := h.jobs.DeleteJob(admin, &pb.DeleteJobRequest{Name: "report"}); err != nil {
		t.Fatal(err)
	}
	return finished, open
}

// TestRecreatedNameShowsNoOldRuns: a scoped token that creates a job under
// the name of a deleted one, inside its scope, reads none of the deleted
// job's runs — listed, by id, watched or through a trigger's idempotency —
// while a management token still reads them, marked as the deleted job's.
func TestRecreatedNameShowsNoOldRuns(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	admin := with(ctx, mgmt)
	scoped := with(ctx, h.token(t, mgmt, "billing-writer", pb.AclRole_ACL_ROLE_WRITE, map[string]string{"team": "billing"}))
	finished, open := oldJobRuns(t, h, admin)
	if _, err := h.jobs.CreateJob(scoped, &pb.CreateJobRequest{Spec: labelled("report", map[string]string{"team": "billing"})}); err != nil {
		t.Fatalf("scoped CreateJob: %v", err)
	}

	for _, req := range []*pb.ListRunsRequest{{Job: "report"}, {}} {
		resp, err := h.runs.ListRuns(scoped, req)
		if err != nil {
			t.Fatalf("ListRuns(%v): %v", req, err)
		}
		if len(resp.GetRuns()) > 0 {
			t.Errorf("scoped ListRuns(%v) = %v, want none of the deleted job's runs", req, runIDs(resp.GetRuns()))
		}
	}
	for _, r := range []*pb.Run{finished, open} {
		_, err := h.runs.GetRun(scoped, &pb.GetRunRequest{Id: r.GetId()})
		wantCode(t, err, codes.NotFound)
	}
	trig, err := h.jobs.TriggerJob(scoped, &pb.TriggerJobRequest{Name: "report", RequestId: "old-1"})
	if err != nil {
		t.Fatalf("scoped TriggerJob: %v", err)
	}
	if trig.GetRun().GetId() == finished.GetId() || len(trig.GetRun().GetAttempts()[0].GetOutput()) > 0 {
		t.Fatalf("a trigger of the new job with the old request id returned the old run %v", trig.GetRun())
	}

	// A watch of the new job sees its own runs, not the old job's run
	// finishing after the re-create.
	stream, err := h.runs.WatchRuns(scoped, &pb.WatchRunsRequest{Job: "report"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Header(); err != nil {
		t.Fatalf("watch not in place: %v", err)
	}
	if _, err := h.runs.CancelRun(admin, &pb.CancelRunRequest{Id: open.GetId()}); err != nil {
		t.Fatalf("management cancels the old job's run: %v", err)
	}
	if _, err := h.runs.CancelRun(admin, &pb.CancelRunRequest{Id: trig.GetRun().GetId()}); err != nil {
		t.Fatalf("management cancels the new job's run: %v", err)
	}
	got := make(chan *pb.Run, 1)
	go func() {
		r, err := stream.Recv()
		if err != nil {
			t.Errorf("Recv: %v", err)
		}
		got <- r.GetRun()
	}()
	select {
	case r := <-got:
		if r.GetId() != trig.GetRun().GetId() {
			t.Fatalf("the scoped watcher got run %s, want only the new job's %s", r.GetId(), trig.GetRun().GetId())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no run reached the watcher")
	}

	// Management still reads the old runs.
	all, err := h.runs.ListRuns(admin, &pb.ListRunsRequest{Job: "report"})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.GetRuns()) != 3 {
		t.Fatalf("management ListRuns = %v, want the new run and the deleted job's two", runIDs(all.GetRuns()))
	}
	for _, r := range all.GetRuns() {
		if deleted := r.GetId() != trig.GetRun().GetId(); r.GetJobDeleted() != deleted {
			t.Errorf("management sees run %s with job_deleted %v, want %v", r.GetId(), r.GetJobDeleted(), deleted)
		}
	}
	got1, err := h.runs.GetRun(admin, &pb.GetRunRequest{Id: finished.GetId()})
	if err != nil || !got1.GetRun().GetJobDeleted() || string(got1.GetRun().GetAttempts()[0].GetOutput()) != "payroll of the old job" {
		t.Fatalf("management GetRun of the deleted job's run: %v, %v; want it, marked job_deleted", got1, err)
	}
}

// TestWatchMarksTheRunsOfDeletedJobs: a watcher without a selector sees a
// deleted job's run finish, marked job_deleted, while the hub's shared
// copy stays unmarked.
func TestWatchMarksTheRunsOfDeletedJobs(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := testCtx(t)
	admin := with(ctx, h.bootstrap(t))
	_, open := oldJobRuns(t, h, admin)
	stream, err := h.runs.WatchRuns(admin, &pb.WatchRunsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Header(); err != nil {
		t.Fatalf("watch not in place: %v", err)
	}
	if _, err := h.runs.CancelRun(admin, &pb.CancelRunRequest{Id: open.GetId()}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.GetRun(); r.GetId() != open.GetId() || !r.GetJobDeleted() {
		t.Fatalf("watched %v, want run %s marked job_deleted", r, open.GetId())
	}
}
