package jobspec

import (
	"fmt"
	"sort"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const (
	MaxRetryAttempts = 100
	MaxLabels        = 64
	MaxLabelValue    = 256 // characters
)

// labelKeyRule is the shape of a label key.
const labelKeyRule = "[a-zA-Z0-9][a-zA-Z0-9._/-]{0,62}"

// validLabelKey matches labelKeyRule, without a regular expression: it runs
// for every label of every write.
func validLabelKey(k string) bool {
	if len(k) == 0 || len(k) > 63 || !isAlnum(k[0]) {
		return false
	}
	for i := 1; i < len(k); i++ {
		if c := k[i]; !isAlnum(c) && c != '.' && c != '_' && c != '/' && c != '-' {
			return false
		}
	}
	return true
}

func checkPolicies(v *violations, spec *pb.JobSpec) {
	if c := spec.GetCatchup(); c != nil {
		nonNegativeDuration(v, "catchup.window", c.GetWindow())
		if _, ok := pb.CatchupPolicy_name[int32(c.GetPolicy())]; !ok {
			v.add("catchup.policy", "must be one of all, latest, none")
		}
	}
	if _, ok := pb.Overlap_name[int32(spec.GetOverlap())]; !ok {
		v.add("overlap", "must be one of skip, allow, buffer_one, cancel_other")
	}
	if _, ok := pb.Delivery_name[int32(spec.GetDelivery())]; !ok {
		v.add("delivery", "must be one of at_least_once, at_most_once")
	}
	checkRetry(v, spec.GetRetry())
	positiveDuration(v, "deadline", spec.GetDeadline())
}

func checkRetry(v *violations, r *pb.Retry) {
	if r == nil {
		return
	}
	if n := r.GetMaxAttempts(); n < 1 || n > MaxRetryAttempts {
		v.add("retry.max_attempts", fmt.Sprintf("must be between 1 and %d", MaxRetryAttempts))
	}
	initialOK := positiveDuration(v, "retry.initial_backoff", r.GetInitialBackoff())
	maxOK := positiveDuration(v, "retry.max_backoff", r.GetMaxBackoff())
	if initialOK && maxOK && r.GetInitialBackoff() != nil && r.GetMaxBackoff() != nil &&
		r.GetInitialBackoff().AsDuration() > r.GetMaxBackoff().AsDuration() {
		v.add("retry.initial_backoff", "must not exceed retry.max_backoff")
	}
}

// checkBounds refuses an end_at that has passed: such a job could never
// fire again, so registering it is a mistake rather than a no-op.
func checkBounds(v *violations, spec *pb.JobSpec, now time.Time) {
	startOK := validTimestamp(v, "start_at", spec.GetStartAt())
	endOK := validTimestamp(v, "end_at", spec.GetEndAt())
	if !endOK || spec.GetEndAt() == nil {
		return
	}
	end := spec.GetEndAt().AsTime()
	if startOK && spec.GetStartAt() != nil && !spec.GetStartAt().AsTime().Before(end) {
		v.add("end_at", "must be after start_at")
	}
	if !end.After(now) {
		v.add("end_at", "is in the past (a job past its end_at never fires)")
	}
}

func checkMetadata(v *violations, spec *pb.JobSpec) {
	checkLabels(v, "labels", spec.GetLabels())
	if spec.GetHistoryLimit() > MaxHistoryLimit {
		v.add("history_limit", fmt.Sprintf("must be at most %d", MaxHistoryLimit))
	}
	note := spec.GetPauseNote()
	if !utf8.ValidString(note) {
		v.add("pause_note", "must be valid UTF-8")
	} else if utf8.RuneCountInString(note) > MaxPauseNote {
		v.add("pause_note", fmt.Sprintf("must be at most %d characters", MaxPauseNote))
	}
}

// checkLabels applies the label rules to labels, reported under field:
// the job's labels, a worker target's tags and a token's selector.
func checkLabels(v *violations, field string, labels map[string]string) {
	if len(labels) > MaxLabels {
		v.add(field, fmt.Sprintf("at most %d entries", MaxLabels))
	}
	for _, k := range sortedKeys(labels) {
		switch val := labels[k]; {
		case !validLabelKey(k):
			v.add(field, "key "+quote(k)+" must match "+labelKeyRule)
		case !utf8.ValidString(val):
			v.add(field, "value of "+quote(k)+" must be valid UTF-8")
		case utf8.RuneCountInString(val) > MaxLabelValue:
			v.add(field, fmt.Sprintf("value of %s must be at most %d characters", quote(k), MaxLabelValue))
		}
	}
}

// positiveDuration checks an optional duration; it reports whether the
// field is absent or fine.
func positiveDuration(v *violations, field string, d *durationpb.Duration) bool {
	if d == nil {
		return true
	}
	if d.CheckValid() != nil {
		v.add(field, "must be a valid duration")
		return false
	}
	if d.AsDuration() <= 0 {
		v.add(field, "must be a positive duration")
		return false
	}
	return true
}

func nonNegativeDuration(v *violations, field string, d *durationpb.Duration) {
	if d == nil {
		return
	}
	if d.CheckValid() != nil {
		v.add(field, "must be a valid duration")
		return
	}
	if d.AsDuration() < 0 {
		v.add(field, "must not be negative")
	}
}

func validTimestamp(v *violations, field string, ts *timestamppb.Timestamp) bool {
	if ts == nil {
		return true
	}
	if ts.CheckValid() != nil {
		v.add(field, "must be a valid time between years 0001 and 9999")
		return false
	}
	return true
}

// sortedKeys makes map checks report in a stable order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
