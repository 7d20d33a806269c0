package api

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// TestScopedTokenNeitherSeesNorChangesOtherJobs: a write token scoped to
// team=billing, against a job of team=hr that management registered.
func TestScopedTokenNeitherSeesNorChangesOtherJobs(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	billing := map[string]string{"team": "billing"}
	scoped := with(ctx, h.token(t, mgmt, "billing-ci", pb.AclRole_ACL_ROLE_WRITE, billing))
	admin := with(ctx, mgmt)
	if _, err := h.jobs.CreateJob(admin, &pb.CreateJobRequest{Spec: labelled("payroll", map[string]string{"team": "hr"})}); err != nil {
		t.Fatal(err)
	}
	other, err := h.jobs.TriggerJob(admin, &pb.TriggerJobRequest{Name: "payroll"})
	if err != nil {
		t.Fatal(err)
	}

	// Outside the scope reads exactly as missing: same code, same message.
	same := func(t *testing.T, what string, hidden, missing error) {
		t.Helper()
		h, m := status.Convert(hidden), status.Convert(missing)
		if h.Code() != codes.NotFound || h.Code() != m.Code() ||
			h.Message() != strings.Replace(m.Message(), "nosuch", "payroll", 1) {
			t.Errorf("%s: hidden job answers %v, a missing one %v: want the same NotFound", what, h, m)
		}
	}
	_, errH := h.jobs.GetJob(scoped, &pb.GetJobRequest{Name: "payroll"})
	_, errM := h.jobs.GetJob(scoped, &pb.GetJobRequest{Name: "nosuch"})
	same(t, "GetJob", errH, errM)
	_, errH = h.jobs.UpdateJob(scoped, &pb.UpdateJobRequest{Spec: labelled("payroll", billing)})
	_, errM = h.jobs.UpdateJob(scoped, &pb.UpdateJobRequest{Spec: labelled("nosuch", billing)})
	same(t, "UpdateJob", errH, errM)
	_, errH = h.jobs.DeleteJob(scoped, &pb.DeleteJobRequest{Name: "payroll"})
	_, errM = h.jobs.DeleteJob(scoped, &pb.DeleteJobRequest{Name: "nosuch"})
	same(t, "DeleteJob", errH, errM)
	_, errH = h.jobs.PauseJob(scoped, &pb.PauseJobRequest{Name: "payroll"})
	_, errM = h.jobs.PauseJob(scoped, &pb.PauseJobRequest{Name: "nosuch"})
	same(t, "PauseJob", errH, errM)
	_, errH = h.jobs.TriggerJob(scoped, &pb.TriggerJobRequest{Name: "payroll"})
	_, errM = h.jobs.TriggerJob(scoped, &pb.TriggerJobRequest{Name: "nosuch"})
	same(t, "TriggerJob", errH, errM)
	_, errH = h.jobs.PreviewSchedule(scoped, &pb.PreviewScheduleRequest{Name: "payroll"})
	_, errM = h.jobs.PreviewSchedule(scoped, &pb.PreviewScheduleRequest{Name: "nosuch"})
	same(t, "PreviewSchedule", errH, errM)
	_, errH = h.fence.CheckToken(scoped, &pb.CheckTokenRequest{Job: "payroll", Token: 1})
	_, errM = h.fence.CheckToken(scoped, &pb.CheckTokenRequest{Job: "nosuch", Token: 1})
	same(t, "CheckToken", errH, errM)
	_, err = h.runs.GetRun(scoped, &pb.GetRunRequest{Id: other.GetRun().GetId()})
	if st := wantCode(t, err, codes.NotFound); st.Message() != `run "`+other.GetRun().GetId()+`" not found` {
		t.Errorf("GetRun of a hidden run says %q", st.Message())
	}
	// Its name is taken: an upsert can only say so.
	_, err = h.jobs.ApplyJob(scoped, &pb.ApplyJobRequest{Spec: labelled("payroll", billing)})
	wantCode(t, err, codes.AlreadyExists)

	// Nothing of it changed.
	job, err := h.store.f.Job("payroll")
	if err != nil || job.GetVersion() != 1 || job.GetSpec().GetPaused() {
		t.Fatalf("the hidden job changed: %v, %v", job, err)
	}

	// It cannot create outside its scope, nor move a job out of it.
	_, err = h.jobs.CreateJob(scoped, &pb.CreateJobRequest{Spec: labelled("audit", map[string]string{"team": "hr"})})
	st := wantCode(t, err, codes.PermissionDenied)
	if want := "team=billing"; !strings.Contains(st.Message(), want) {
		t.Errorf("message %q does not name the selector %s", st.Message(), want)
	}
	_, err = h.jobs.ApplyJobs(scoped, &pb.ApplyJobsRequest{Specs: []*pb.JobSpec{labelled("a", billing), labelled("b", nil)}})
	if st := wantCode(t, err, codes.PermissionDenied); !strings.Contains(st.Message(), "specs[1].labels") {
		t.Errorf("ApplyJobs refusal %q does not name the spec", st.Message())
	}
	if _, err := h.store.f.Job("a"); err == nil {
		t.Fatal("a refused ApplyJobs applied some of its specs")
	}

	// Inside its scope it works as any write token.
	if _, err := h.jobs.CreateJob(scoped, &pb.CreateJobRequest{Spec: labelled("invoices", map[string]string{"team": "billing", "tier": "1"})}); err != nil {
		t.Fatalf("create in scope: %v", err)
	}
	_, err = h.jobs.UpdateJob(scoped, &pb.UpdateJobRequest{Spec: labelled("invoices", map[string]string{"team": "hr"})})
	wantCode(t, err, codes.PermissionDenied)
	mine, err := h.jobs.TriggerJob(scoped, &pb.TriggerJobRequest{Name: "invoices"})
	if err != nil {
		t.Fatalf("trigger in scope: %v", err)
	}
	if _, err := h.runs.GetRun(scoped, &pb.GetRunRequest{Id: mine.GetRun().GetId()}); err != nil {
		t.Fatalf("GetRun in scope: %v", err)
	}

	// Lists show its jobs and runs only.
	list, err := h.jobs.ListJobs(scoped, &pb.ListJobsRequest{})
	if err != nil || len(list.GetJobs()) != 1 || list.GetJobs()[0].GetSpec().GetName() != "invoices" {
		t.Fatalf("ListJobs = %v, %v; want invoices only", list.GetJobs(), err)
	}
	list, err = h.jobs.ListJobs(scoped, &pb.ListJobsRequest{LabelSelector: map[string]string{"team": "hr"}})
	if err != nil || len(list.GetJobs()) != 0 {
		t.Fatalf("ListJobs of team=hr = %v, %v; want nothing", list.GetJobs(), err)
	}
	runs, err := h.runs.ListRuns(scoped, &pb.ListRunsRequest{})
	if err != nil || len(runs.GetRuns()) != 1 || runs.GetRuns()[0].GetJob() != "invoices" {
		t.Fatalf("ListRuns = %v, %v; want the run of invoices only", runs.GetRuns(), err)
	}
	runs, err = h.runs.ListRuns(scoped, &pb.ListRunsRequest{Job: "payroll"})
	if err != nil || len(runs.GetRuns()) != 0 {
		t.Fatalf("ListRuns of payroll = %v, %v; want nothing", runs.GetRuns(), err)
	}
	all, err := h.runs.ListRuns(admin, &pb.ListRunsRequest{})
	if err != nil || len(all.GetRuns()) != 2 {
		t.Fatalf("management ListRuns = %v, %v; want both runs", all.GetRuns(), err)
	}
}

func TestScopedWatchSeesOnlyItsJobs(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	admin := with(ctx, mgmt)
	scoped := with(ctx, h.token(t, mgmt, "billing-viewer", pb.AclRole_ACL_ROLE_READ, map[string]string{"team": "billing"}))
	for name, team := range map[string]string{"payroll": "hr", "invoices": "billing"} {
		if _, err := h.jobs.CreateJob(admin, &pb.CreateJobRequest{Spec: labelled(name, map[string]string{"team": team})}); err != nil {
			t.Fatal(err)
		}
	}
	stream, err := h.runs.WatchRuns(scoped, &pb.WatchRunsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Header(); err != nil {
		t.Fatalf("watch not in place: %v", err)
	}
	// The hidden job's run commits first; the watcher must skip it.
	for _, name := range []string{"payroll", "invoices"} {
		if _, err := h.jobs.TriggerJob(admin, &pb.TriggerJobRequest{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan *pb.WatchRunsResponse, 1)
	go func() {
		r, err := stream.Recv()
		if err != nil {
			t.Errorf("Recv: %v", err)
		}
		got <- r
	}()
	select {
	case r := <-got:
		if r.GetRun().GetJob() != "invoices" {
			t.Fatalf("the scoped watcher got a run of %q", r.GetRun().GetJob())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no run reached the watcher")
	}
}

// TestScopedListPagesThroughItsJobsOnly: a scoped token paging ListJobs one
// job at a time meets every job of its scope and no other, whichever way
// the names of hidden jobs interleave with its own.
func TestScopedListPagesThroughItsJobsOnly(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	admin := with(ctx, mgmt)
	billing := map[string]string{"team": "billing"}
	scoped := with(ctx, h.token(t, mgmt, "billing-viewer", pb.AclRole_ACL_ROLE_READ, billing))
	for name, team := range map[string]string{"a-hr": "hr", "b-billing": "billing", "c-hr": "hr", "d-billing": "billing", "e-hr": "hr"} {
		if _, err := h.jobs.CreateJob(admin, &pb.CreateJobRequest{Spec: labelled(name, map[string]string{"team": team})}); err != nil {
			t.Fatal(err)
		}
	}
	var seen []string
	token := ""
	for page := 0; page < 10; page++ {
		resp, err := h.jobs.ListJobs(scoped, &pb.ListJobsRequest{PageSize: 1, PageToken: token})
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		for _, j := range resp.GetJobs() {
			seen = append(seen, j.GetSpec().GetName())
		}
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	if token != "" {
		t.Fatalf("still paging after 10 pages; seen %v", seen)
	}
	if got := strings.Join(seen, ","); got != "b-billing,d-billing" {
		t.Fatalf("a scoped token paged through %s, want b-billing,d-billing", got)
	}
}

// TestScopedListRunsPagesThroughItsRunsOnly: paging ListRuns one run at a
// time with a scoped token meets every run of its scope and no other, and
// a page token it did not get back is refused.
func TestScopedListRunsPagesThroughItsRunsOnly(t *testing.T) {
	h := newACLHarness(t, true)
	ctx := testCtx(t)
	mgmt := h.bootstrap(t)
	admin := with(ctx, mgmt)
	scoped := with(ctx, h.token(t, mgmt, "billing-viewer", pb.AclRole_ACL_ROLE_READ, map[string]string{"team": "billing"}))
	var want []string
	for i, team := range []string{"hr", "billing", "hr", "billing", "hr"} {
		name := fmt.Sprintf("job-%d", i)
		if _, err := h.jobs.CreateJob(admin, &pb.CreateJobRequest{Spec: labelled(name, map[string]string{"team": team})}); err != nil {
			t.Fatal(err)
		}
		resp, err := h.jobs.TriggerJob(admin, &pb.TriggerJobRequest{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		if team == "billing" {
			want = append([]string{resp.GetRun().GetId()}, want...)
		}
	}
	var seen []string
	token := ""
	for page := 0; page < 10; page++ {
		resp, err := h.runs.ListRuns(scoped, &pb.ListRunsRequest{Limit: 1, PageToken: token})
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		seen = append(seen, runIDs(resp.GetRuns())...)
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("paged %v, want %v", seen, want)
	}
	for _, bad := range []string{"not base64!", "bm8tc2xhc2g", "eC95"} { // "no-slash", "x/y"
		_, err := h.runs.ListRuns(scoped, &pb.ListRunsRequest{PageToken: bad})
		st := wantCode(t, err, codes.InvalidArgument)
		if fields := badRequestFields(t, st); !slices.Equal(fields, []string{"page_token"}) {
			t.Errorf("page token %q: fields %v, want [page_token]", bad, fields)
		}
	}
}
