package jobspec

import (
	"strings"
	"testing"
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func chainedJob() *pb.JobSpec {
	return &pb.JobSpec{
		Name: "load-warehouse",
		After: []*pb.Dependency{
			{Job: "export-orders"},
			{Job: "export-customers", On: pb.DependencyOn_DEPENDENCY_ON_ANY},
		},
		Http: &pb.HttpTarget{Url: "https://warehouse.internal/load"},
	}
}

// A job with dependencies needs no schedule, and gets their defaults; one
// without keeps no dependency setting at all.
func TestDependenciesAreValidAndFilled(t *testing.T) {
	t.Parallel()
	spec := chainedJob()
	if err := Validate(spec, now); err != nil {
		t.Fatalf("a job with after and no schedule: %v", err)
	}
	Normalize(spec)
	if got := spec.GetAfter()[0].GetOn(); got != pb.DependencyOn_DEPENDENCY_ON_SUCCESS {
		t.Errorf("after[0].on = %v, want success", got)
	}
	if got := spec.GetAfter()[1].GetOn(); got != pb.DependencyOn_DEPENDENCY_ON_ANY {
		t.Errorf("after[1].on = %v, want any as given", got)
	}
	if spec.GetAfterMode() != pb.AfterMode_AFTER_MODE_ALL || spec.GetAfterMissing() != pb.AfterMissing_AFTER_MISSING_REFUSE {
		t.Errorf("after_mode %v, after_missing %v; want all and refuse", spec.GetAfterMode(), spec.GetAfterMissing())
	}
	if err := Validate(spec, now); err != nil {
		t.Fatalf("normalized: %v", err)
	}
	plain := fullJob()
	Normalize(plain)
	if plain.GetAfterMode() != 0 || plain.GetAfterMissing() != 0 {
		t.Errorf("a job without after got after_mode %v, after_missing %v", plain.GetAfterMode(), plain.GetAfterMissing())
	}
}

func TestDependencyRules(t *testing.T) {
	t.Parallel()
	many := make([]*pb.Dependency, MaxParents+1)
	for i := range many {
		many[i] = &pb.Dependency{Job: "p" + strings.Repeat("x", i)}
	}
	tests := []struct {
		name      string
		mutate    func(*pb.JobSpec)
		wantField string
		wantRule  string
	}{
		{"no schedule, no after", func(s *pb.JobSpec) { s.After = nil }, "schedule", "required (or schedules; unless the job runs after others"},
		{"itself", func(s *pb.JobSpec) { s.After[0].Job = "load-warehouse" }, "after[0].job", "cannot run after itself"},
		{"twice", func(s *pb.JobSpec) { s.After[1].Job = "export-orders" }, "after[1].job", `"export-orders" is named twice`},
		{"bad name", func(s *pb.JobSpec) { s.After[1].Job = "Export" }, "after[1].job", "must match"},
		{"no name", func(s *pb.JobSpec) { s.After[0].Job = "" }, "after[0].job", "required"},
		{"unknown on", func(s *pb.JobSpec) { s.After[0].On = 9 }, "after[0].on", "success, failure, any"},
		{"unknown mode", func(s *pb.JobSpec) { s.AfterMode = 7 }, "after_mode", "all, any"},
		{"unknown missing", func(s *pb.JobSpec) { s.AfterMissing = 7 }, "after_missing", "refuse, wait"},
		{"negative within", func(s *pb.JobSpec) { s.AfterWithin = dur(-time.Minute) }, "after_within", "must not be negative"},
		{"too many", func(s *pb.JobSpec) { s.After = many }, "after", "33 parents exceed the limit of 32"},
		{"mode without after", func(s *pb.JobSpec) { s.After, s.Schedule, s.AfterMode = nil, "@hourly", pb.AfterMode_AFTER_MODE_ANY },
			"after_mode", "only with after"},
		{"within without after", func(s *pb.JobSpec) { s.After, s.Schedule, s.AfterWithin = nil, "@hourly", dur(time.Hour) },
			"after_within", "only with after"},
		{"missing without after", func(s *pb.JobSpec) {
			s.After, s.Schedule, s.AfterMissing = nil, "@hourly", pb.AfterMissing_AFTER_MISSING_WAIT
		}, "after_missing", "only with after"},
		{"bad schedule with after", func(s *pb.JobSpec) { s.Schedule = "every day" }, "schedule", "want 5 fields"},
		{"bad schedules with after", func(s *pb.JobSpec) { s.Schedules = []string{"@hourly", "every day"} },
			"schedules[1]", "want 5 fields"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := chainedJob()
			tc.mutate(spec)
			vs := violationsOf(t, Validate(spec, now))
			if len(vs) != 1 || vs[0].Field != tc.wantField || !strings.Contains(vs[0].Rule, tc.wantRule) {
				t.Fatalf("violations %+v; want exactly one on %q mentioning %q", vs, tc.wantField, tc.wantRule)
			}
		})
	}
}
