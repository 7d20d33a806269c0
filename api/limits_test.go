package api

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/internal/testutil"
	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// A spec beyond this node's limits is refused whole, naming the field and
// the limit, before anything is proposed.
func TestSpecBeyondTheLimitsIsRefused(t *testing.T) {
	h := newHarnessConfig(t, func(c *Deps) { c.Limits.Spec = jobspec.Limits{Headers: 1} })
	spec := validSpec("billing")
	spec.Http.Headers = map[string]string{"A": "1", "B": "2"}
	_, err := h.jobs.CreateJob(testCtx(t), &pb.CreateJobRequest{Spec: spec})
	st := wantCode(t, err, codes.InvalidArgument)
	if fields := badRequestFields(t, st); !slices.Equal(fields, []string{"http.headers"}) || !strings.Contains(st.Message(), "limit of 1 headers") {
		t.Errorf("status %v (fields %v), want http.headers naming the limit", st.Message(), fields)
	}
	_, err = h.jobs.ApplyJobs(testCtx(t), &pb.ApplyJobsRequest{Specs: []*pb.JobSpec{validSpec("ok"), spec}})
	st = wantCode(t, err, codes.InvalidArgument)
	if fields := badRequestFields(t, st); !slices.Equal(fields, []string{"specs[1].http.headers"}) {
		t.Errorf("ApplyJobs fields %v, want specs[1].http.headers", fields)
	}
	if n := len(h.store.proposed()); n != 0 {
		t.Errorf("%d commands proposed, want none", n)
	}
}

// Every put carries the registry's job limit, so the FSM decides a create
// beyond it alike on every node; the default applies when none is set.
func TestPutsCarryTheJobLimit(t *testing.T) {
	for _, tc := range []struct {
		set, want uint64
	}{{0, DefaultMaxJobs}, {5, 5}} {
		h := newHarnessConfig(t, func(c *Deps) { c.Limits.MaxJobs = tc.set })
		ctx := testCtx(t)
		if _, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: validSpec("a")}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.jobs.ApplyJobs(ctx, &pb.ApplyJobsRequest{Specs: []*pb.JobSpec{validSpec("b")}}); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range h.store.proposed() {
			if got := cmd.GetPutJob().GetMaxJobs(); got != tc.want {
				t.Errorf("limit %d: put carries max_jobs %d, want %d", tc.set, got, tc.want)
			}
		}
	}
}

// The FSM's LIMIT_EXCEEDED, and a trigger refused for the open-runs
// limit, are ResourceExhausted with the message that names the limit.
func TestLimitsExceededAreResourceExhausted(t *testing.T) {
	msg := `job "c" not created: the registry holds 2 jobs, its limit (max_jobs) is 2 jobs`
	st := wantCode(t, resultStatus(&pb.CommandResult{Code: pb.ResultCode_RESULT_CODE_LIMIT_EXCEEDED, Message: msg}), codes.ResourceExhausted)
	if st.Message() != msg {
		t.Errorf("message %q, want %q", st.Message(), msg)
	}
	_, err := triggered("many", &pb.FireResult{Reason: fsm.ReasonOpenRunsLimit})
	st = wantCode(t, err, codes.ResourceExhausted)
	if !strings.Contains(st.Message(), "open runs") {
		t.Errorf("message %q does not name the open-runs limit", st.Message())
	}
}

// A node serves at most its limit of run watchers; one more is refused
// with ResourceExhausted naming the limit, and a freed place is reused.
func TestWatchersBeyondTheLimitAreRefused(t *testing.T) {
	h := newHarnessHub(t, NewRunHubWith(1))
	ctx := testCtx(t)
	firstCtx, cancelFirst := context.WithCancel(ctx)
	openWatch(t, h, firstCtx, "")
	stream, err := h.runs.WatchRuns(ctx, &pb.WatchRunsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = stream.Recv()
	st := wantCode(t, err, codes.ResourceExhausted)
	if !strings.Contains(st.Message(), "limit of 1 watchers") {
		t.Errorf("message %q does not name the limit", st.Message())
	}
	cancelFirst()
	testutil.WaitFor(t, 5*time.Second, "the first watch to end", func() bool { return h.hub.Watchers() == 0 })
	openWatch(t, h, ctx, "")
}

// ListJobs with a label filter scans a bounded part of the registry per
// call: the query carries the bound.
func TestListJobsBoundsTheScan(t *testing.T) {
	h := newHarness(t)
	for i := range 3 {
		h.store.putJob(&pb.Job{Spec: validSpec(fmt.Sprintf("j%d", i)), Generation: 1, Version: 1})
	}
	if _, err := h.jobs.ListJobs(testCtx(t), &pb.ListJobsRequest{LabelSelector: map[string]string{"team": "x"}}); err != nil {
		t.Fatal(err)
	}
	if q := h.store.lastQuery(); q.MaxScan != maxListScan {
		t.Errorf("query %+v, want MaxScan %d", q, maxListScan)
	}
}
