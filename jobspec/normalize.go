// Package jobspec holds the rules a job spec must follow and the defaults
// it gets, independent of how it arrived (gRPC, job file).
package jobspec

import (
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Defaults filled by Normalize. They are declared here and nowhere else:
// the API normalizes every spec before proposing it, so a stored spec
// states every setting, and the FSM, the scheduler and the executors read
// the stored values without defaults of their own (a zero there means
// zero).
const (
	DefaultTimezone      = "UTC"
	DefaultMethod        = "POST"
	DefaultCatchupWindow = time.Minute
	DefaultHistoryLimit  = 10
	// A retry policy's backoffs, when it sets none; an initial backoff
	// above DefaultMaxBackoff raises the cap to it, a cap below
	// DefaultInitialBackoff lowers the initial backoff to it.
	DefaultInitialBackoff = time.Second
	DefaultMaxBackoff     = time.Minute
	// DefaultCheckinGrace is a check-in job's expect.start_within when it
	// sets none: how late a ping may come before its slot is missed.
	DefaultCheckinGrace = time.Minute
)

// Normalize fills defaults in place so that a stored spec states every
// setting explicitly: what `job get` prints applies back unchanged.
// Normalizing twice changes nothing; nil and partial specs are fine.
func Normalize(spec *pb.JobSpec) {
	if spec == nil {
		return
	}
	spec.Schedule = strings.TrimSpace(spec.Schedule)
	for i, s := range spec.Schedules {
		spec.Schedules[i] = strings.TrimSpace(s)
	}
	spec.Timezone = strings.TrimSpace(spec.Timezone)
	if spec.Timezone == "" {
		spec.Timezone = DefaultTimezone
	}
	if spec.Http != nil {
		spec.Http.Method = strings.ToUpper(strings.TrimSpace(spec.Http.Method))
		if spec.Http.Method == "" {
			spec.Http.Method = DefaultMethod
		}
	}
	if spec.HistoryLimit == 0 {
		spec.HistoryLimit = DefaultHistoryLimit
	}
	normalizeCalendarRefs(spec)
	for _, n := range spec.Notify {
		if n != nil {
			normalizeNotify(&n.On, &n.AfterFailures)
		}
	}
	normalizeDependencies(spec)
	if spec.Checkin != nil {
		normalizeCheckin(spec)
		return // nothing is fired: no catch-up, overlap, delivery or retry
	}
	if spec.Catchup == nil {
		spec.Catchup = &pb.Catchup{}
	}
	if spec.Catchup.Window == nil {
		spec.Catchup.Window = durationpb.New(DefaultCatchupWindow)
	}
	if spec.Catchup.Policy == pb.CatchupPolicy_CATCHUP_POLICY_UNSPECIFIED {
		spec.Catchup.Policy = pb.CatchupPolicy_CATCHUP_POLICY_ALL
	}
	if spec.Overlap == pb.Overlap_OVERLAP_UNSPECIFIED {
		spec.Overlap = pb.Overlap_OVERLAP_SKIP
	}
	if spec.Delivery == pb.Delivery_DELIVERY_UNSPECIFIED {
		spec.Delivery = pb.Delivery_DELIVERY_AT_LEAST_ONCE
	}
	normalizeRetry(spec.Retry)
}

// normalizeCheckin stores a check-in job's grace.
func normalizeCheckin(spec *pb.JobSpec) {
	if spec.Expect == nil {
		spec.Expect = &pb.Expect{}
	}
	if spec.Expect.StartWithin == nil {
		spec.Expect.StartWithin = durationpb.New(DefaultCheckinGrace)
	}
}

// normalizeRetry fills the backoffs of a retry policy. Without a policy a
// job has one attempt, which needs no setting.
func normalizeRetry(r *pb.Retry) {
	if r == nil {
		return
	}
	initial, limit := r.InitialBackoff, r.MaxBackoff
	if initial == nil {
		d := DefaultInitialBackoff
		if v := limit.AsDuration(); limit != nil && v > 0 {
			d = min(d, v) // an invalid cap is Validate's to report, alone
		}
		r.InitialBackoff = durationpb.New(d)
	}
	if limit == nil {
		d := DefaultMaxBackoff
		if initial != nil {
			d = max(d, initial.AsDuration()) // a bad initial backoff stays below
		}
		r.MaxBackoff = durationpb.New(d)
	}
}
