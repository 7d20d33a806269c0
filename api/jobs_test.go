package api

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestCreateJobProposesNormalizedSpec(t *testing.T) {
	h := newHarness(t)
	spec := validSpec("billing")
	resp, err := h.jobs.CreateJob(testCtx(t), &pb.CreateJobRequest{Spec: spec})
	if err != nil {
		t.Fatalf("CreateJob: %v", err)
	}
	want := proto.CloneOf(spec)
	jobspec.Normalize(want)
	cmds := h.store.proposed()
	if len(cmds) != 1 {
		t.Fatalf("%d commands proposed, want 1", len(cmds))
	}
	put := cmds[0].GetPutJob()
	if put.GetMode() != pb.PutMode_PUT_MODE_CREATE || !proto.Equal(put.GetSpec(), want) {
		t.Errorf("proposed %v, want a CREATE of %v", put, want)
	}
	if got := cmds[0].GetProposedAtUnixNano(); got != 0 {
		t.Errorf("proposed_at_unix_nano = %d, want 0: the leader stamps commands, not the receiving node", got)
	}
	if !proto.Equal(resp.GetJob().GetSpec(), want) || resp.GetJob().GetVersion() != 1 {
		t.Errorf("response job %v, want version 1 of %v", resp.GetJob(), want)
	}
}

func TestCreateJobAlreadyExists(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	if _, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: validSpec("a")}); err != nil {
		t.Fatal(err)
	}
	_, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: validSpec("a")})
	wantCode(t, err, codes.AlreadyExists)
}

func TestUpdateJob(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	created, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: validSpec("a")})
	if err != nil {
		t.Fatal(err)
	}
	spec := validSpec("a")
	spec.Schedule = "@hourly"
	resp, err := h.jobs.UpdateJob(ctx, &pb.UpdateJobRequest{Spec: spec, ExpectedVersion: created.GetJob().GetVersion()})
	if err != nil {
		t.Fatalf("UpdateJob with the current version: %v", err)
	}
	if resp.GetJob().GetSpec().GetSchedule() != "@hourly" || resp.GetJob().GetVersion() != 2 {
		t.Errorf("updated job %v, want version 2 with schedule @hourly", resp.GetJob())
	}
	last := h.store.proposed()[1].GetPutJob()
	if last.GetMode() != pb.PutMode_PUT_MODE_UPDATE || last.GetExpectedVersion() != 1 {
		t.Errorf("proposed %v, want UPDATE expecting version 1", last)
	}

	t.Run("stale version", func(t *testing.T) {
		_, err := h.jobs.UpdateJob(ctx, &pb.UpdateJobRequest{Spec: validSpec("a"), ExpectedVersion: 1})
		wantCode(t, err, codes.FailedPrecondition)
	})
	t.Run("missing job", func(t *testing.T) {
		_, err := h.jobs.UpdateJob(ctx, &pb.UpdateJobRequest{Spec: validSpec("nope")})
		wantCode(t, err, codes.NotFound)
	})
}

func TestApplyJobCreatesThenIsANoOp(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	first, err := h.jobs.ApplyJob(ctx, &pb.ApplyJobRequest{Spec: validSpec("a")})
	if err != nil {
		t.Fatal(err)
	}
	if !first.GetCreated() || !first.GetChanged() {
		t.Errorf("first apply: created=%v changed=%v, want both true", first.GetCreated(), first.GetChanged())
	}
	// What `job get` returns (normalized) applies back unchanged.
	again, err := h.jobs.ApplyJob(ctx, &pb.ApplyJobRequest{Spec: first.GetJob().GetSpec()})
	if err != nil {
		t.Fatal(err)
	}
	if again.GetCreated() || again.GetChanged() || again.GetJob().GetVersion() != 1 {
		t.Errorf("re-apply: created=%v changed=%v version=%d, want no change", again.GetCreated(), again.GetChanged(), again.GetJob().GetVersion())
	}
	if mode := h.store.proposed()[0].GetPutJob().GetMode(); mode != pb.PutMode_PUT_MODE_UPSERT {
		t.Errorf("mode %v, want UPSERT", mode)
	}
}

func TestGetJobReadBarrier(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	if _, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: validSpec("a")}); err != nil {
		t.Fatal(err)
	}
	resp, err := h.jobs.GetJob(ctx, &pb.GetJobRequest{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetJob().GetSpec().GetName() != "a" {
		t.Errorf("got %v, want job a", resp.GetJob())
	}
	if n := h.store.barrierCount(); n != 1 {
		t.Errorf("default read ran %d barriers, want 1", n)
	}
	if _, err := h.jobs.GetJob(ctx, &pb.GetJobRequest{Name: "a", Stale: true}); err != nil {
		t.Fatal(err)
	}
	if n := h.store.barrierCount(); n != 1 {
		t.Errorf("stale read ran a barrier (%d in all), want none", n)
	}
}

func TestGetJobNotFound(t *testing.T) {
	h := newHarness(t)
	_, err := h.jobs.GetJob(testCtx(t), &pb.GetJobRequest{Name: "ghost"})
	wantCode(t, err, codes.NotFound)
}

// A failed barrier means the node cannot prove it is current: no stale
// answer is served in its place.
func TestGetJobBarrierFailure(t *testing.T) {
	h := newHarness(t)
	h.store.barrierErr = &cluster.NoLeaderError{LeaderID: "n2", LeaderAddr: "127.0.0.1:7002"}
	_, err := h.jobs.GetJob(testCtx(t), &pb.GetJobRequest{Name: "a"})
	assertNotLeader(t, err, "n2", "127.0.0.1:7002")
}

func TestListJobsPagesAndFilters(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	var names []string
	for i := range 7 {
		spec := validSpec(fmt.Sprintf("job-%d", i))
		spec.Labels = map[string]string{"team": []string{"red", "blue"}[i%2]}
		if _, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: spec}); err != nil {
			t.Fatal(err)
		}
		names = append(names, spec.GetName())
	}

	var got []string
	var pages []int
	token := ""
	for range 10 { // bounded: 3 pages expected
		resp, err := h.jobs.ListJobs(ctx, &pb.ListJobsRequest{PageSize: 3, PageToken: token})
		if err != nil {
			t.Fatalf("ListJobs: %v", err)
		}
		pages = append(pages, len(resp.GetJobs()))
		for _, j := range resp.GetJobs() {
			got = append(got, j.GetSpec().GetName())
		}
		token = resp.GetNextPageToken()
		if token == "" {
			break
		}
	}
	if !slices.Equal(pages, []int{3, 3, 1}) || !slices.Equal(got, names) {
		t.Errorf("pages %v with %v, want pages [3 3 1] with %v", pages, got, names)
	}
	if n := h.store.barrierCount(); n != 3 {
		t.Errorf("%d barriers for 3 linearizable pages, want 3", n)
	}

	resp, err := h.jobs.ListJobs(ctx, &pb.ListJobsRequest{LabelSelector: map[string]string{"team": "blue"}, Stale: true})
	if err != nil {
		t.Fatal(err)
	}
	var blue []string
	for _, j := range resp.GetJobs() {
		blue = append(blue, j.GetSpec().GetName())
	}
	if !slices.Equal(blue, []string{"job-1", "job-3", "job-5"}) || resp.GetNextPageToken() != "" {
		t.Errorf("team=blue listed %v (next %q), want [job-1 job-3 job-5] and no next page", blue, resp.GetNextPageToken())
	}
	if n := h.store.barrierCount(); n != 3 {
		t.Errorf("stale list ran a barrier")
	}
}

func TestListJobsPageSize(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	for _, tc := range []struct{ asked, limit int }{{0, 100}, {1, 1}, {1000, 1000}, {5000, 1000}} {
		if _, err := h.jobs.ListJobs(ctx, &pb.ListJobsRequest{PageSize: uint32(tc.asked)}); err != nil {
			t.Fatal(err)
		}
		if got := h.store.lastQuery().Limit; got != tc.limit {
			t.Errorf("page_size %d: registry asked for %d, want %d", tc.asked, got, tc.limit)
		}
	}
}

func TestListJobsBadPageToken(t *testing.T) {
	h := newHarness(t)
	for _, token := range []string{"%%%", base64.RawURLEncoding.EncodeToString([]byte("Not A Name"))} {
		_, err := h.jobs.ListJobs(testCtx(t), &pb.ListJobsRequest{PageToken: token})
		st := wantCode(t, err, codes.InvalidArgument)
		if fields := badRequestFields(t, st); !slices.Equal(fields, []string{"page_token"}) {
			t.Errorf("token %q: violations on %v, want [page_token]", token, fields)
		}
	}
	if n := h.store.barrierCount(); n != 0 {
		t.Errorf("a refused request ran %d barriers", n)
	}
}

func TestDeletePauseResume(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	if _, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: validSpec("a")}); err != nil {
		t.Fatal(err)
	}
	paused, err := h.jobs.PauseJob(ctx, &pb.PauseJobRequest{Name: "a", Note: "migration"})
	if err != nil {
		t.Fatal(err)
	}
	if !paused.GetJob().GetSpec().GetPaused() || paused.GetJob().GetSpec().GetPauseNote() != "migration" {
		t.Errorf("paused job %v, want paused with note", paused.GetJob())
	}
	cmd := h.store.proposed()[1]
	if sp := cmd.GetSetPaused(); sp.GetName() != "a" || !sp.GetPaused() || sp.GetNote() != "migration" || cmd.GetProposedAtUnixNano() != 0 {
		t.Errorf("pause proposed %v", cmd)
	}
	resumed, err := h.jobs.ResumeJob(ctx, &pb.ResumeJobRequest{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if resumed.GetJob().GetSpec().GetPaused() {
		t.Errorf("resumed job still paused: %v", resumed.GetJob())
	}
	if sp := h.store.proposed()[2].GetSetPaused(); sp.GetPaused() || sp.GetNote() != "" {
		t.Errorf("resume proposed %v, want paused=false without note", sp)
	}

	_, err = h.jobs.DeleteJob(ctx, &pb.DeleteJobRequest{Name: "a", ExpectedVersion: 1})
	wantCode(t, err, codes.FailedPrecondition)
	if _, err := h.jobs.DeleteJob(ctx, &pb.DeleteJobRequest{Name: "a", ExpectedVersion: 3}); err != nil {
		t.Fatalf("DeleteJob: %v", err)
	}
	if del := h.store.proposed()[4].GetDeleteJob(); del.GetName() != "a" || del.GetExpectedVersion() != 3 {
		t.Errorf("delete proposed %v", del)
	}
	_, err = h.jobs.GetJob(ctx, &pb.GetJobRequest{Name: "a"})
	wantCode(t, err, codes.NotFound)

	for name, call := range map[string]func() error{
		"delete": func() error { _, err := h.jobs.DeleteJob(ctx, &pb.DeleteJobRequest{Name: "a"}); return err },
		"pause":  func() error { _, err := h.jobs.PauseJob(ctx, &pb.PauseJobRequest{Name: "a"}); return err },
		"resume": func() error { _, err := h.jobs.ResumeJob(ctx, &pb.ResumeJobRequest{Name: "a"}); return err },
	} {
		t.Run(name+" missing", func(t *testing.T) { wantCode(t, call(), codes.NotFound) })
	}
}

func TestInvalidSpecIsRefusedWithFieldViolations(t *testing.T) {
	withSpec := func(mutate func(*pb.JobSpec)) *pb.JobSpec {
		s := validSpec("a")
		mutate(s)
		return s
	}
	cases := map[string]struct {
		spec  *pb.JobSpec
		field string
	}{
		"bad schedule":     {withSpec(func(s *pb.JobSpec) { s.Schedule = "every tuesday" }), "schedule"},
		"bad timezone":     {withSpec(func(s *pb.JobSpec) { s.Timezone = "Mars/Olympus" }), "timezone"},
		"bad url":          {withSpec(func(s *pb.JobSpec) { s.Http.Url = "not a url" }), "http.url"},
		"exec and http":    {withSpec(func(s *pb.JobSpec) { s.Exec = &pb.ExecTarget{Command: []string{"/bin/true"}} }), "http"},
		"bad name":         {withSpec(func(s *pb.JobSpec) { s.Name = "Bad Name" }), "name"},
		"no spec":          {nil, "spec"},
		"bad retry":        {withSpec(func(s *pb.JobSpec) { s.Retry = &pb.Retry{MaxAttempts: 1 << 30} }), "retry.max_attempts"},
		"past end_at":      {withSpec(func(s *pb.JobSpec) { s.EndAt = tsOf(testNow.AddDate(0, 0, -1)) }), "end_at"},
		"bad history":      {withSpec(func(s *pb.JobSpec) { s.HistoryLimit = 1 << 20 }), "history_limit"},
		"long pause_note":  {withSpec(func(s *pb.JobSpec) { s.PauseNote = strings.Repeat("x", jobspec.MaxPauseNote+1) }), "pause_note"},
		"unknown overlap":  {withSpec(func(s *pb.JobSpec) { s.Overlap = 42 }), "overlap"},
		"relative exec":    {withSpec(func(s *pb.JobSpec) { s.Http = nil; s.Exec = &pb.ExecTarget{Command: []string{"true"}, Dir: "tmp"} }), "exec.dir"},
		"negative timeout": {withSpec(func(s *pb.JobSpec) { s.Http.Timeout = durOf(-1) }), "http.timeout"},
	}
	h := newHarness(t)
	ctx := testCtx(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			calls := map[string]func() error{
				"create": func() error { _, err := h.jobs.CreateJob(ctx, &pb.CreateJobRequest{Spec: tc.spec}); return err },
				"update": func() error { _, err := h.jobs.UpdateJob(ctx, &pb.UpdateJobRequest{Spec: tc.spec}); return err },
				"apply":  func() error { _, err := h.jobs.ApplyJob(ctx, &pb.ApplyJobRequest{Spec: tc.spec}); return err },
			}
			for rpc, call := range calls {
				st := wantCode(t, call(), codes.InvalidArgument)
				if fields := badRequestFields(t, st); !slices.Contains(fields, tc.field) {
					t.Errorf("%s: violations on %v, want one on %q (message %q)", rpc, fields, tc.field, st.Message())
				}
				if strings.Contains(st.Message(), "\n") {
					t.Errorf("%s: message spans lines: %q", rpc, st.Message())
				}
			}
		})
	}
	if cmds := h.store.proposed(); len(cmds) != 0 {
		t.Errorf("invalid specs proposed %d commands, want none", len(cmds))
	}
}

func TestInvalidNameIsRefused(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	for _, name := range []string{"", "Bad Name", "-lead", strings.Repeat("a", 64)} {
		calls := map[string]func() error{
			"get":    func() error { _, err := h.jobs.GetJob(ctx, &pb.GetJobRequest{Name: name}); return err },
			"delete": func() error { _, err := h.jobs.DeleteJob(ctx, &pb.DeleteJobRequest{Name: name}); return err },
			"pause":  func() error { _, err := h.jobs.PauseJob(ctx, &pb.PauseJobRequest{Name: name}); return err },
			"resume": func() error { _, err := h.jobs.ResumeJob(ctx, &pb.ResumeJobRequest{Name: name}); return err },
		}
		for rpc, call := range calls {
			st := wantCode(t, call(), codes.InvalidArgument)
			if fields := badRequestFields(t, st); !slices.Equal(fields, []string{"name"}) {
				t.Errorf("%s(%q): violations on %v, want [name]", rpc, name, fields)
			}
		}
	}
	if cmds, n := h.store.proposed(), h.store.barrierCount(); len(cmds) != 0 || n != 0 {
		t.Errorf("bad names led to %d commands and %d barriers, want none", len(cmds), n)
	}
}

func TestPauseNoteTooLong(t *testing.T) {
	h := newHarness(t)
	_, err := h.jobs.PauseJob(testCtx(t), &pb.PauseJobRequest{Name: "a", Note: strings.Repeat("é", jobspec.MaxPauseNote+1)})
	st := wantCode(t, err, codes.InvalidArgument)
	if fields := badRequestFields(t, st); !slices.Equal(fields, []string{"note"}) {
		t.Errorf("violations on %v, want [note]", fields)
	}
	if cmds := h.store.proposed(); len(cmds) != 0 {
		t.Errorf("proposed %d commands, want none", len(cmds))
	}
}

func TestWriteWithoutLeaderIsUnavailableWithLeaderHint(t *testing.T) {
	h := newHarness(t)
	h.store.applyErr = fmt.Errorf("forwarding: %w", &cluster.NoLeaderError{LeaderID: "n2", LeaderAddr: "10.0.0.2:7001"})
	_, err := h.jobs.CreateJob(testCtx(t), &pb.CreateJobRequest{Spec: validSpec("a")})
	assertNotLeader(t, err, "n2", "10.0.0.2:7001")
}

func assertNotLeader(t *testing.T, err error, leaderID, leaderAddr string) {
	t.Helper()
	st := wantCode(t, err, codes.Unavailable)
	ei := errorInfo(st)
	if ei == nil {
		t.Fatalf("status %v has no ErrorInfo", st)
	}
	md := ei.GetMetadata()
	if ei.GetReason() != "NOT_LEADER" || ei.GetDomain() != "raftcron.io" || md["leader_id"] != leaderID || md["leader_address"] != leaderAddr {
		t.Errorf("ErrorInfo %v, want NOT_LEADER in raftcron.io with leader %s at %s", ei, leaderID, leaderAddr)
	}
}
