package api

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func previewTimes(resp *pb.PreviewScheduleResponse) []string {
	var out []string
	for _, ts := range resp.GetTimes() {
		out = append(out, ts.AsTime().UTC().Format(time.RFC3339))
	}
	return out
}

func TestPreviewScheduleInlineDST(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	cases := []struct {
		name, after string
		want        []string
	}{
		// 02:30 does not exist on 03-29: it fires at the transition.
		{"spring forward", "2026-03-28T12:00:00Z", []string{"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z"}},
		// 02:30 occurs twice on 10-25: it fires once, at the first.
		{"fall back", "2026-10-24T12:00:00Z", []string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z", "2026-10-27T01:30:00Z"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			after, _ := time.Parse(time.RFC3339, tc.after)
			resp, err := h.jobs.PreviewSchedule(ctx, &pb.PreviewScheduleRequest{
				Schedule: "30 2 * * *", Timezone: "Europe/Berlin", Count: 3, After: tsOf(after),
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := previewTimes(resp); !slices.Equal(got, tc.want) {
				t.Fatalf("times %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPreviewScheduleInlineDefaults(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	resp, err := h.jobs.PreviewSchedule(ctx, &pb.PreviewScheduleRequest{Schedule: "@hourly"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"2026-06-01T13:00:00Z", "2026-06-01T14:00:00Z", "2026-06-01T15:00:00Z", "2026-06-01T16:00:00Z", "2026-06-01T17:00:00Z"}
	if got := previewTimes(resp); !slices.Equal(got, want) {
		t.Fatalf("count 0 and after unset: %v, want 5 times after now, UTC: %v", got, want)
	}
	resp, err = h.jobs.PreviewSchedule(ctx, &pb.PreviewScheduleRequest{Schedule: "@every 1s", Count: 5000})
	if err != nil || len(resp.GetTimes()) != maxPreviewCount {
		t.Fatalf("count 5000: %d times, %v; want capped at %d", len(resp.GetTimes()), err, maxPreviewCount)
	}
}

func TestPreviewScheduleBadInput(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		name  string
		req   *pb.PreviewScheduleRequest
		code  codes.Code
		field string
	}{
		{"minute out of range", &pb.PreviewScheduleRequest{Schedule: "61 * * * *"}, codes.InvalidArgument, "schedule"},
		{"TZ= prefix", &pb.PreviewScheduleRequest{Schedule: "TZ=Europe/Berlin 0 2 * * *"}, codes.InvalidArgument, "schedule"},
		{"never fires", &pb.PreviewScheduleRequest{Schedule: "0 0 30 2 *"}, codes.InvalidArgument, "schedule"},
		{"unknown zone", &pb.PreviewScheduleRequest{Schedule: "@daily", Timezone: "Mars/Olympus_Mons"}, codes.InvalidArgument, "timezone"},
		{"host zone", &pb.PreviewScheduleRequest{Schedule: "@daily", Timezone: "Local"}, codes.InvalidArgument, "timezone"},
		{"neither name nor schedule", &pb.PreviewScheduleRequest{}, codes.InvalidArgument, "name"},
		{"both name and schedule", &pb.PreviewScheduleRequest{Name: "a", Schedule: "@daily"}, codes.InvalidArgument, "schedule"},
		{"timezone with a name", &pb.PreviewScheduleRequest{Name: "a", Timezone: "UTC"}, codes.InvalidArgument, "timezone"},
		{"bad name", &pb.PreviewScheduleRequest{Name: "Bad Name"}, codes.InvalidArgument, "name"},
		{"bad after", &pb.PreviewScheduleRequest{Schedule: "@daily", After: tsOf(time.Date(10001, 1, 1, 0, 0, 0, 0, time.UTC))}, codes.InvalidArgument, "after"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.jobs.PreviewSchedule(testCtx(t), tc.req)
			st := wantCode(t, err, tc.code)
			if fields := badRequestFields(t, st); !slices.Contains(fields, tc.field) {
				t.Errorf("fields %v do not name %s (%s)", fields, tc.field, st.Message())
			}
		})
	}
	t.Run("missing job", func(t *testing.T) {
		_, err := h.jobs.PreviewSchedule(testCtx(t), &pb.PreviewScheduleRequest{Name: "nope"})
		wantCode(t, err, codes.NotFound)
	})
}

func TestPreviewScheduleRegisteredJob(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	spec := validSpec("nightly")
	spec.Timezone = "Europe/Berlin"
	// Slots at 00:00Z (02:00 CEST) daily. The cursor is ahead of now: the
	// slot of 06-02 was evaluated already (it cannot fire again).
	cursor := time.Date(2026, 6, 2, 0, 0, 0, 0, time.UTC)
	spec.EndAt = tsOf(time.Date(2026, 6, 5, 0, 0, 0, 0, time.UTC))
	h.store.putJob(&pb.Job{Spec: spec, Generation: 1, Version: 1, Status: &pb.JobStatus{CursorUnix: cursor.Unix()}})
	barriers := h.store.barrierCount()
	resp, err := h.jobs.PreviewSchedule(ctx, &pb.PreviewScheduleRequest{Name: "nightly", Count: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"2026-06-03T00:00:00Z", "2026-06-04T00:00:00Z", "2026-06-05T00:00:00Z"}
	if got := previewTimes(resp); !slices.Equal(got, want) {
		t.Fatalf("times %v, want after the cursor and up to end_at: %v", got, want)
	}
	if h.store.barrierCount() != barriers+1 {
		t.Error("a registered job was previewed without a read barrier")
	}

	t.Run("start_at", func(t *testing.T) {
		late := validSpec("late")
		late.StartAt = tsOf(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)) // a slot exactly at start_at fires
		late.Schedule = "0 0 * * *"
		h.store.putJob(&pb.Job{Spec: late, Generation: 1, Version: 1, Status: &pb.JobStatus{}})
		resp, err := h.jobs.PreviewSchedule(ctx, &pb.PreviewScheduleRequest{Name: "late", Count: 2})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := previewTimes(resp), []string{"2026-07-01T00:00:00Z", "2026-07-02T00:00:00Z"}; !slices.Equal(got, want) {
			t.Fatalf("times %v, want from start_at on: %v", got, want)
		}
	})
}

func TestJobReadsFillNextFire(t *testing.T) {
	h := newHarness(t)
	ctx := testCtx(t)
	put := func(name string, edit func(*pb.JobSpec), st *pb.JobStatus) {
		spec := validSpec(name) // 02:00 UTC daily
		if edit != nil {
			edit(spec)
		}
		h.store.putJob(&pb.Job{Spec: spec, Generation: 1, Version: 1, Status: st})
	}
	tomorrow := time.Date(2026, 6, 2, 2, 0, 0, 0, time.UTC).Unix()
	put("active", nil, &pb.JobStatus{CursorUnix: testNow.Add(-time.Hour).Unix(), NextFireUnix: 99})
	put("ahead", nil, &pb.JobStatus{CursorUnix: tomorrow})
	put("paused", func(s *pb.JobSpec) { s.Paused = true }, &pb.JobStatus{NextFireUnix: 99})
	put("ended", func(s *pb.JobSpec) { s.EndAt = tsOf(testNow.Add(time.Hour)) }, &pb.JobStatus{})
	want := map[string]int64{
		"active": tomorrow,
		"ahead":  time.Date(2026, 6, 3, 2, 0, 0, 0, time.UTC).Unix(),
		"paused": 0,
		"ended":  0,
	}
	for name, next := range want {
		resp, err := h.jobs.GetJob(ctx, &pb.GetJobRequest{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.GetJob().GetStatus().GetNextFireUnix(); got != next {
			t.Errorf("GetJob(%s): next_fire_unix %d, want %d", name, got, next)
		}
	}
	list, err := h.jobs.ListJobs(ctx, &pb.ListJobsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, job := range list.GetJobs() {
		if got := job.GetStatus().GetNextFireUnix(); got != want[job.GetSpec().GetName()] {
			t.Errorf("ListJobs %s: next_fire_unix %d, want %d", job.GetSpec().GetName(), got, want[job.GetSpec().GetName()])
		}
	}
}
