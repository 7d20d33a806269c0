package jobspec

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestNormalizeFillsEveryDefault(t *testing.T) {
	t.Parallel()
	spec := &pb.JobSpec{Name: "a", Schedule: " @hourly ", Http: &pb.HttpTarget{Url: "http://x"}}
	Normalize(spec)
	checks := []struct {
		what string
		ok   bool
	}{
		{"schedule trimmed", spec.Schedule == "@hourly"},
		{"timezone UTC", spec.Timezone == "UTC"},
		{"method POST", spec.Http.Method == "POST"},
		{"catch-up window 1m", spec.Catchup.GetWindow().AsDuration() == time.Minute},
		{"catch-up policy all", spec.Catchup.GetPolicy() == pb.CatchupPolicy_CATCHUP_POLICY_ALL},
		{"overlap skip", spec.Overlap == pb.Overlap_OVERLAP_SKIP},
		{"delivery at least once", spec.Delivery == pb.Delivery_DELIVERY_AT_LEAST_ONCE},
		{"history limit 10", spec.HistoryLimit == 10},
		{"no exec invented", spec.Exec == nil},
		{"no retry invented", spec.Retry == nil},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: got %v", c.what, spec)
		}
	}
}

func TestNormalizeKeepsExplicitValues(t *testing.T) {
	t.Parallel()
	spec := fullJob()
	spec.Http.Method = "put"
	spec.Catchup = &pb.Catchup{Window: dur(0), Policy: pb.CatchupPolicy_CATCHUP_POLICY_NONE}
	spec.Overlap = pb.Overlap_OVERLAP_ALLOW
	spec.Delivery = pb.Delivery_DELIVERY_AT_MOST_ONCE
	spec.HistoryLimit = 3
	want := proto.Clone(spec).(*pb.JobSpec)
	want.Http.Method = "PUT"
	Normalize(spec)
	if !proto.Equal(spec, want) {
		t.Fatalf("Normalize changed explicit values:\n got  %v\n want %v", spec, want)
	}
}

func TestNormalizeCatchupPartial(t *testing.T) {
	t.Parallel()
	spec := &pb.JobSpec{Catchup: &pb.Catchup{Policy: pb.CatchupPolicy_CATCHUP_POLICY_LATEST}}
	Normalize(spec)
	if spec.Catchup.GetWindow().AsDuration() != time.Minute || spec.Catchup.Policy != pb.CatchupPolicy_CATCHUP_POLICY_LATEST {
		t.Fatalf("catchup %v", spec.Catchup)
	}
}

func TestNormalizeIsIdempotent(t *testing.T) {
	t.Parallel()
	specs := []*pb.JobSpec{
		{}, fullJob(), execJob(),
		{Name: "a", Http: &pb.HttpTarget{Method: " get "}},
		{Catchup: &pb.Catchup{}, Retry: &pb.Retry{}},
	}
	for _, spec := range specs {
		Normalize(spec)
		once := proto.Clone(spec)
		Normalize(spec)
		if !proto.Equal(once, spec) {
			t.Errorf("second Normalize changed the spec:\n %v\n %v", once, spec)
		}
	}
}

func TestNormalizeNil(t *testing.T) {
	t.Parallel()
	Normalize(nil) // must not panic
	spec := &pb.JobSpec{Http: nil, Exec: nil, Catchup: nil, Retry: nil}
	Normalize(spec)
	if spec.Catchup == nil {
		t.Fatal("catchup not filled")
	}
}

// A retry policy states its backoffs once stored, so that `job get` shows
// them and the FSM, which computes the retries, reads them instead of
// keeping defaults of its own.
func TestNormalizeFillsRetryBackoffs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name         string
		retry        *pb.Retry
		initial, max time.Duration
	}{
		{"both unset", &pb.Retry{MaxAttempts: 3}, time.Second, time.Minute},
		{"initial above the default cap", &pb.Retry{MaxAttempts: 3, InitialBackoff: dur(2 * time.Minute)}, 2 * time.Minute, 2 * time.Minute},
		{"cap below the default initial", &pb.Retry{MaxAttempts: 3, MaxBackoff: dur(500 * time.Millisecond)}, 500 * time.Millisecond, 500 * time.Millisecond},
		{"both set", &pb.Retry{MaxAttempts: 3, InitialBackoff: dur(3 * time.Second), MaxBackoff: dur(time.Hour)}, 3 * time.Second, time.Hour},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := fullJob()
			spec.Retry = c.retry
			Normalize(spec)
			if got := spec.Retry.GetInitialBackoff().AsDuration(); spec.Retry.InitialBackoff == nil || got != c.initial {
				t.Errorf("initial_backoff %v, want %v", spec.Retry.GetInitialBackoff(), c.initial)
			}
			if got := spec.Retry.GetMaxBackoff().AsDuration(); spec.Retry.MaxBackoff == nil || got != c.max {
				t.Errorf("max_backoff %v, want %v", spec.Retry.GetMaxBackoff(), c.max)
			}
			if err := Validate(spec, now); err != nil {
				t.Errorf("normalized spec does not validate: %v", err)
			}
		})
	}
}

// A bad backoff is reported for the field the operator set, not also for
// the one Normalize derived from it.
func TestNormalizeRetryLeavesABadBackoffToValidate(t *testing.T) {
	t.Parallel()
	spec := fullJob()
	spec.Retry = &pb.Retry{MaxAttempts: 3, MaxBackoff: dur(-time.Second)}
	Normalize(spec)
	var ve *ValidationError
	if err := Validate(spec, now); !errors.As(err, &ve) || len(ve.Violations) != 1 || ve.Violations[0].Field != "retry.max_backoff" {
		t.Fatalf("Validate = %v, want one violation of retry.max_backoff", err)
	}
}
