package jobspec

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func checkinJob() *pb.JobSpec {
	return &pb.JobSpec{Name: "nightly", Schedule: "0 2 * * *", Checkin: &pb.CheckinTarget{}}
}

// TestNormalizeCheckinStoresTheGraceOnly: a check-in job gets its grace
// and the settings every job has, and none of the policies of fired jobs,
// which Validate would refuse.
func TestNormalizeCheckinStoresTheGraceOnly(t *testing.T) {
	t.Parallel()
	spec := checkinJob()
	Normalize(spec)
	want := &pb.JobSpec{
		Name: "nightly", Schedule: "0 2 * * *", Timezone: "UTC", Checkin: &pb.CheckinTarget{},
		HistoryLimit: DefaultHistoryLimit, Expect: &pb.Expect{StartWithin: dur(time.Minute)},
	}
	if !proto.Equal(spec, want) {
		t.Fatalf("normalized\n got  %v\n want %v", spec, want)
	}
	if err := Validate(spec, now); err != nil {
		t.Fatalf("a normalized check-in job is refused: %v", err)
	}
	spec.Expect.StartWithin = dur(5 * time.Minute)
	again := proto.Clone(spec).(*pb.JobSpec)
	Normalize(again)
	if !proto.Equal(again, spec) {
		t.Fatalf("Normalize changed a set grace: %v", again)
	}
}

// TestValidateRejectsCheckins: exactly one target, no policy of fired
// jobs (each named by its field), and a grace within bounds.
func TestValidateRejectsCheckins(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		mutate    func(*pb.JobSpec)
		wantField string
		wantRule  string
	}{
		{"checkin and http", func(s *pb.JobSpec) { s.Http = fullJob().Http }, "http", "exactly one of http, exec, worker or checkin"},
		{"catchup", func(s *pb.JobSpec) { s.Catchup = &pb.Catchup{Window: dur(time.Minute)} }, "catchup", "does not apply to a check-in job"},
		{"overlap", func(s *pb.JobSpec) { s.Overlap = pb.Overlap_OVERLAP_SKIP }, "overlap", "does not apply to a check-in job"},
		{"delivery", func(s *pb.JobSpec) { s.Delivery = pb.Delivery_DELIVERY_AT_MOST_ONCE }, "delivery", "does not apply to a check-in job"},
		{"retry", func(s *pb.JobSpec) { s.Retry = &pb.Retry{MaxAttempts: 2} }, "retry", "cannot try it again"},
		{"calendars", func(s *pb.JobSpec) { s.Calendars = &pb.CalendarRefs{Exclude: []string{"holidays"}} }, "calendars",
			"does not apply to a check-in job yet"},
		{"jitter", func(s *pb.JobSpec) { s.Jitter = dur(time.Second) }, "jitter", "no dispatch to delay"},
		{"max_runs", func(s *pb.JobSpec) { s.MaxRuns = 3 }, "max_runs", "does not apply to a check-in job"},
		{"pause_after_failures", func(s *pb.JobSpec) { s.PauseAfterFailures = 2 }, "pause_after_failures", "does not apply to a check-in job yet"},
		{"zero grace", func(s *pb.JobSpec) { s.Expect = &pb.Expect{StartWithin: dur(0)} }, "expect.start_within", "positive"},
		{"grace beyond a year", func(s *pb.JobSpec) { s.Expect = &pb.Expect{StartWithin: dur(367 * 24 * time.Hour)} },
			"expect.start_within", "at most 8784h"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := checkinJob()
			Normalize(spec)
			tc.mutate(spec)
			vs := violationsOf(t, Validate(spec, now))
			if len(vs) != 1 || vs[0].Field != tc.wantField || !strings.Contains(vs[0].Rule, tc.wantRule) {
				t.Fatalf("violations %+v; want exactly one on %q mentioning %q", vs, tc.wantField, tc.wantRule)
			}
		})
	}
}

// TestValidateAcceptsACheckinDeadline: a deadline bounds a check-in run.
func TestValidateAcceptsACheckinDeadline(t *testing.T) {
	t.Parallel()
	spec := checkinJob()
	spec.Deadline = dur(time.Hour)
	spec.Labels = map[string]string{"team": "ops"}
	if err := Validate(spec, now); err != nil {
		t.Fatal(err)
	}
}

// TestNormalizeCheckinFillsItsNotify: a check-in job's notify entries are
// filled in like any job's, with the expectations of its runs.
func TestNormalizeCheckinFillsItsNotify(t *testing.T) {
	t.Parallel()
	spec := checkinJob()
	spec.Expect = &pb.Expect{MaxDuration: dur(time.Hour)}
	spec.Notify = []*pb.Notify{{Channel: "ops"}}
	Normalize(spec)
	if n := spec.GetNotify()[0]; len(n.GetOn()) != 8 || n.GetAfterFailures() != 1 {
		t.Fatalf("normalized notify %v, want every event and after_failures 1", n)
	}
	if e := spec.GetExpect(); e.GetStartWithin().AsDuration() != time.Minute || e.GetMaxDuration().AsDuration() != time.Hour {
		t.Fatalf("normalized expect %v, want the default grace and max_duration kept", e)
	}
	if err := Validate(spec, now); err != nil {
		t.Fatalf("a check-in job with notify and max_duration is refused: %v", err)
	}
}
