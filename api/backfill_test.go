package api

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// hourly is a job firing every hour, on the hour.
func hourly(name string, labels map[string]string) *pb.JobSpec {
	s := labelled(name, labels)
	s.Schedule = "0 * * * *"
	return s
}

func backfillReq(name string, from, to time.Duration) *pb.BackfillJobRequest {
	return &pb.BackfillJobRequest{Name: name, From: timestamppb.New(testNow.Add(from)), To: timestamppb.New(testNow.Add(to))}
}

// TestBackfillJob: the slots of the range are counted on the job's
// schedule; bad requests are refused naming their field, and start
// nothing; a second backfill waits for the first; a cancel stops it.
func TestBackfillJob(t *testing.T) {
	h := newACLHarness(t, false)
	ctx := testCtx(t)
	if _, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: hourly("billing", nil)}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		req   *pb.BackfillJobRequest
		field string
		code  codes.Code
	}{
		{"from after to", backfillReq("billing", -time.Hour, -2*time.Hour), "from", codes.InvalidArgument},
		{"no from", &pb.BackfillJobRequest{Name: "billing", To: timestamppb.New(testNow)}, "from", codes.InvalidArgument},
		{"to after now", backfillReq("billing", -time.Hour, time.Hour), "to", codes.InvalidArgument},
		{"no slot", backfillReq("billing", -30*time.Minute, -20*time.Minute), "from", codes.InvalidArgument},
		{"too many slots", backfillReq("billing", -24*10001*time.Hour/24, 0), "to", codes.InvalidArgument},
		{"unknown overlap", func() *pb.BackfillJobRequest {
			r := backfillReq("billing", -5*time.Hour, 0)
			r.Overlap = "cancel_other"
			return r
		}(), "overlap", codes.InvalidArgument},
		{"concurrent without allow", func() *pb.BackfillJobRequest {
			r := backfillReq("billing", -5*time.Hour, 0)
			r.MaxConcurrent = 2
			return r
		}(), "max_concurrent", codes.InvalidArgument},
		{"missing job", backfillReq("nosuch", -5*time.Hour, 0), "", codes.NotFound},
	} {
		_, err := h.jobs.BackfillJob(ctx, tc.req)
		st := wantCode(t, err, tc.code)
		if tc.field != "" && !strings.HasPrefix(st.Message(), tc.field+":") {
			t.Errorf("%s: %q, want it to name %s", tc.name, st.Message(), tc.field)
		}
		if bf, _ := h.store.f.Job("billing"); bf.GetStatus().GetBackfill() != nil {
			t.Fatalf("%s: a refused backfill started: %v", tc.name, bf.GetStatus().GetBackfill())
		}
	}
	req := backfillReq("billing", -5*time.Hour-time.Second, 0)
	req.Overlap, req.MaxConcurrent = "allow", 2
	resp, err := h.jobs.BackfillJob(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	bf := resp.GetBackfill()
	first := testNow.Add(-5 * time.Hour).Truncate(time.Hour)
	if bf.GetSlots() != 5 || bf.GetNextSlotUnix() != first.Unix() || bf.GetOverlap() != "allow" ||
		bf.GetState() != pb.BackfillState_BACKFILL_STATE_RUNNING || bf.GetMaxConcurrent() != 2 {
		t.Fatalf("backfill %v, want 5 slots from %v, allow 2 at once", bf, first)
	}
	_, err = h.jobs.BackfillJob(ctx, backfillReq("billing", -5*time.Hour, 0))
	wantCode(t, err, codes.AlreadyExists)
	job, err := h.jobs.GetJob(ctx, &pb.GetJobRequest{Name: "billing"})
	if err != nil || job.GetJob().GetStatus().GetBackfill().GetId() != bf.GetId() {
		t.Fatalf("GetJob shows backfill %v, %v; want %s", job.GetJob().GetStatus().GetBackfill(), err, bf.GetId())
	}
	cancelled, err := h.jobs.CancelBackfill(ctx, &pb.CancelBackfillRequest{Name: "billing"})
	if err != nil || cancelled.GetBackfill().GetState() != pb.BackfillState_BACKFILL_STATE_CANCELLED {
		t.Fatalf("cancel: %v, %v", cancelled, err)
	}
	_, err = h.jobs.CancelBackfill(ctx, &pb.CancelBackfillRequest{Name: "billing"})
	wantCode(t, err, codes.FailedPrecondition)
	_, err = h.jobs.CancelBackfill(ctx, &pb.CancelBackfillRequest{Name: "nosuch"})
	wantCode(t, err, codes.NotFound)
}

// TestBackfillNeedsWriteInTheJobsScope: read tokens may not backfill; a
// scoped write token backfills its jobs only, and another's reads as
// missing.
func TestBackfillNeedsWriteInTheJobsScope(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	billing := map[string]string{"team": "billing"}
	read := with(ctx, h.token(t, mgmt, "viewer", pb.AclRole_ACL_ROLE_READ, nil))
	scoped := with(ctx, h.token(t, mgmt, "billing-ci", pb.AclRole_ACL_ROLE_WRITE, billing))
	for _, s := range []*pb.JobSpec{hourly("invoices", billing), hourly("payroll", map[string]string{"team": "hr"})} {
		if _, err := h.jobs.CreateJob(with(ctx, mgmt), &pb.CreateJobRequest{Spec: s}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := h.jobs.BackfillJob(read, backfillReq("invoices", -3*time.Hour, 0))
	wantCode(t, err, codes.PermissionDenied)
	_, err = h.jobs.CancelBackfill(read, &pb.CancelBackfillRequest{Name: "invoices"})
	wantCode(t, err, codes.PermissionDenied)
	_, errH := h.jobs.BackfillJob(scoped, backfillReq("payroll", -3*time.Hour, 0))
	_, errM := h.jobs.BackfillJob(scoped, backfillReq("nosuch", -3*time.Hour, 0))
	if wantCode(t, errH, codes.NotFound).Message() != strings.Replace(wantCode(t, errM, codes.NotFound).Message(), "nosuch", "payroll", 1) {
		t.Errorf("a hidden job's backfill answers %v, a missing one's %v", errH, errM)
	}
	if _, err := h.jobs.BackfillJob(with(ctx, mgmt), backfillReq("payroll", -3*time.Hour, 0)); err != nil {
		t.Fatal(err)
	}
	_, err = h.jobs.CancelBackfill(scoped, &pb.CancelBackfillRequest{Name: "payroll"})
	wantCode(t, err, codes.NotFound)
	if _, err := h.jobs.BackfillJob(scoped, backfillReq("invoices", -3*time.Hour, 0)); err != nil {
		t.Fatalf("a backfill in scope: %v", err)
	}
	if _, err := h.jobs.CancelBackfill(scoped, &pb.CancelBackfillRequest{Name: "invoices"}); err != nil {
		t.Fatalf("a cancel in scope: %v", err)
	}
}

// TestTriggerPayloadAndOverlapAreChecked: a payload beyond 64 KiB and an
// unknown overlap are refused naming the field; accepted ones reach the
// scheduler, and the run.
func TestTriggerPayloadAndOverlapAreChecked(t *testing.T) {
	h := newACLHarness(t, false)
	ctx := testCtx(t)
	if _, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: validSpec("billing")}); err != nil {
		t.Fatal(err)
	}
	_, err := h.jobs.TriggerJob(ctx, &pb.TriggerJobRequest{Name: "billing", Payload: strings.Repeat("x", MaxPayload+1)})
	if st := wantCode(t, err, codes.InvalidArgument); !strings.HasPrefix(st.Message(), "payload:") {
		t.Errorf("message %q, want it to name payload", st.Message())
	}
	_, err = h.jobs.TriggerJob(ctx, &pb.TriggerJobRequest{Name: "billing", Overlap: "sometimes"})
	if st := wantCode(t, err, codes.InvalidArgument); !strings.HasPrefix(st.Message(), "overlap:") {
		t.Errorf("message %q, want it to name overlap", st.Message())
	}
	if runs := h.store.f.ListRuns("billing", 0); len(runs) != 0 {
		t.Fatalf("refused triggers made runs %v", runs)
	}
	resp, err := h.jobs.TriggerJob(ctx, &pb.TriggerJobRequest{Name: "billing", Payload: `{"n":1}`, Overlap: "allow"})
	if err != nil || resp.GetRun().GetPayload() != `{"n":1}` {
		t.Fatalf("trigger: %v, %v; want the payload in the run", resp.GetRun(), err)
	}
	again, err := h.jobs.TriggerJob(ctx, &pb.TriggerJobRequest{Name: "billing", Overlap: "OVERLAP_ALLOW"})
	if err != nil || !again.GetRun().GetConcurrent() {
		t.Fatalf("a second trigger with overlap allow while the first is open: %v, %v", again.GetRun(), err)
	}
}

// TestPauseUntilIsChecked: a pause's end must be after now; it is stored
// with the pause and ends it through the log.
func TestPauseUntilIsChecked(t *testing.T) {
	h := newACLHarness(t, false)
	ctx := testCtx(t)
	if _, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: validSpec("billing")}); err != nil {
		t.Fatal(err)
	}
	_, err := h.jobs.PauseJob(ctx, &pb.PauseJobRequest{Name: "billing", Until: timestamppb.New(testNow)})
	if st := wantCode(t, err, codes.InvalidArgument); !strings.HasPrefix(st.Message(), "until:") {
		t.Errorf("message %q, want it to name until", st.Message())
	}
	resp, err := h.jobs.PauseJob(ctx, &pb.PauseJobRequest{Name: "billing", Until: timestamppb.New(testNow.Add(90*time.Minute + time.Millisecond))})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetJob().GetStatus().GetPause().GetUntilUnix(); got != testNow.Add(90*time.Minute).Unix()+1 {
		t.Fatalf("pause until %d, want the end rounded up to %d", got, testNow.Add(90*time.Minute).Unix()+1)
	}
}

// TestScheduleRulesWaitForTheClusterVersion: schedules, jitter, max_runs,
// pause_after_failures, a pause's end, a backfill and a trigger's payload
// are refused until the cluster runs fsm.SchedulesVersion.
func TestScheduleRulesWaitForTheClusterVersion(t *testing.T) {
	var version atomic.Uint32
	version.Store(2)
	h := newHarnessConfig(t, func(c *Deps) { c.ClusterVersion = version.Load })
	ctx := testCtx(t)
	if _, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: hourly("plain", nil)}); err != nil {
		t.Fatal(err)
	}
	rules := []*pb.JobSpec{hourly("a", nil), hourly("b", nil), hourly("c", nil), hourly("d", nil)}
	rules[0].Schedule, rules[0].Schedules = "", []string{"@daily", "@hourly"}
	rules[1].Jitter = durationpb.New(time.Second)
	rules[2].MaxRuns = 3
	rules[3].PauseAfterFailures = 2
	for _, s := range rules {
		_, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: s})
		if st := wantCode(t, err, codes.FailedPrecondition); !strings.Contains(st.Message(), "cluster version 3") {
			t.Errorf("%s: %q, want it to name cluster version 3", s.GetName(), st.Message())
		}
	}
	_, err := h.jobs.PauseJob(ctx, &pb.PauseJobRequest{Name: "plain", Until: timestamppb.New(testNow.Add(time.Hour))})
	wantCode(t, err, codes.FailedPrecondition)
	_, err = h.jobs.BackfillJob(ctx, backfillReq("plain", -3*time.Hour, 0))
	wantCode(t, err, codes.FailedPrecondition)
	_, err = h.jobs.TriggerJob(ctx, &pb.TriggerJobRequest{Name: "plain", Payload: "x"})
	wantCode(t, err, codes.FailedPrecondition)
	version.Store(fsm.SchedulesVersion)
	if _, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: rules[0]}); err != nil {
		t.Fatalf("schedules at cluster version %d: %v", fsm.SchedulesVersion, err)
	}
}
