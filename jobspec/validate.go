package jobspec

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/raftcron/raftcron/schedule"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Limits on a spec. They keep the replicated state small and bounded.
const (
	MaxScheduleLen  = 256
	MaxSchedules    = 16 // members of schedules
	MaxHistoryLimit = 1000
	MaxPauseNote    = 1024 // characters
)

// NameRule is the rule of job, worker and pool names, as messages state it.
const NameRule = "must match [a-z0-9][a-z0-9._-]{0,62}"

// ValidateName checks a job name; it returns nil or a *ValidationError
// with the field "name".
func ValidateName(name string) error {
	var v violations
	checkName(&v, name)
	if len(v) == 0 {
		return nil
	}
	return &ValidationError{Name: name, Violations: v}
}

// Validate checks every rule and reports all broken ones at once: nil or a
// *ValidationError. now decides whether end_at has passed and whether the
// schedule fires within five years. Validate does not modify spec; unset
// fields that Normalize would fill are accepted as their defaults.
func Validate(spec *pb.JobSpec, now time.Time) error {
	_, err := ValidateParsed(spec, now)
	return err
}

// ValidateParsed is Validate that also returns the schedule it parsed (nil
// when the spec is invalid), so that a caller evaluating the schedule next
// does not parse it a second time.
func ValidateParsed(spec *pb.JobSpec, now time.Time) (schedule.Schedule, error) {
	if spec == nil {
		return nil, &ValidationError{Violations: []Violation{{Field: "spec", Rule: "required"}}}
	}
	var v violations
	checkName(&v, spec.GetName())
	loc := checkTimezone(&v, spec.GetTimezone())
	var sched schedule.Schedule
	if HasSchedule(spec) || !HasDependencies(spec) {
		// A job with dependencies may fire on them alone.
		sched = checkSchedules(&v, spec, loc, now)
	}
	checkDependencies(&v, spec)
	checkCalendarRefs(&v, spec.GetCalendars())
	checkTarget(&v, spec)
	checkSecretRefs(&v, spec)
	checkPolicies(&v, spec)
	checkCheckin(&v, spec)
	checkJitter(&v, spec, sched)
	checkBounds(&v, spec, now)
	checkMetadata(&v, spec)
	checkAlerting(&v, spec)
	if len(v) == 0 {
		return sched, nil
	}
	return nil, &ValidationError{Name: spec.GetName(), Violations: v}
}

func checkName(v *violations, name string) {
	switch {
	case name == "":
		v.add("name", "required")
	case !validName(name):
		v.add("name", NameRule)
	}
}

// validName matches NameRule. It runs on every write, where the regular
// expression it replaces cost more than the rest of the name's handling.
func validName(name string) bool {
	if len(name) == 0 || len(name) > 63 || !isLowerAlnum(name[0]) {
		return false
	}
	for i := 1; i < len(name); i++ {
		if c := name[i]; !isLowerAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isLowerAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
}

// checkSchedules checks the job's schedule, or its schedules: exactly one
// of the two is set.
func checkSchedules(v *violations, spec *pb.JobSpec, loc *time.Location, now time.Time) schedule.Schedule {
	specs := spec.GetSchedules()
	switch {
	case len(specs) == 0:
		return checkSchedule(v, spec.GetSchedule(), loc, now)
	case strings.TrimSpace(spec.GetSchedule()) != "":
		v.add("schedules", "give either schedule or schedules, not both")
		return nil
	case len(specs) > MaxSchedules:
		v.add("schedules", fmt.Sprintf("at most %d schedules", MaxSchedules))
		return nil
	}
	seen := make(map[string]int, len(specs))
	trimmed := make([]string, len(specs))
	ok := true
	for i, text := range specs {
		field := fmt.Sprintf("schedules[%d]", i)
		text = strings.TrimSpace(text)
		trimmed[i] = text
		if j, dup := seen[text]; dup {
			v.add(field, fmt.Sprintf("repeats schedules[%d]", j))
			ok = false
			continue
		}
		seen[text] = i
		ok = checkScheduleText(v, field, text) && ok
	}
	if !ok {
		return nil
	}
	set, err := schedule.CachedSet(trimmed, loc)
	if err == nil {
		err = schedule.CheckFires(set, now)
	}
	var se *schedule.SetError
	switch {
	case errors.As(err, &se):
		v.add(fmt.Sprintf("schedules[%d]", se.Index), se.Err.Error())
		return nil
	case err != nil:
		v.add("schedules", err.Error())
		return nil
	}
	return set
}

// checkSchedule parses the spec in the job's zone (UTC when the zone
// itself is bad, so syntax errors are still reported) and returns it, or
// nil when it is not valid. The rule is schedule.Validate's.
func checkSchedule(v *violations, spec string, loc *time.Location, now time.Time) schedule.Schedule {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		v.add("schedule", "required (or schedules; unless the job runs after others: after)")
		return nil
	}
	if !checkScheduleText(v, "schedule", spec) {
		return nil
	}
	s, err := schedule.Cached(spec, loc)
	if err == nil {
		err = schedule.CheckFires(s, now)
	}
	if err != nil {
		v.add("schedule", err.Error())
		return nil
	}
	return s
}

// checkScheduleText applies the rules of a spec's text, reported under
// field, and reports whether it passed.
func checkScheduleText(v *violations, field, spec string) bool {
	switch {
	case spec == "":
		v.add(field, "required")
	case len(spec) > MaxScheduleLen:
		v.add(field, fmt.Sprintf("must be at most %d bytes", MaxScheduleLen))
	case !utf8.ValidString(spec):
		v.add(field, "must be valid UTF-8")
	default:
		return true
	}
	return false
}

// checkJitter: a delay of at least zero, shorter than the catch-up window
// (counted from the slot's nominal time, so a longer jitter would leave
// slots out of their window) and than the interval of an @every schedule
// (a slot would wait for the one before it). sched is the job's valid
// schedule, or nil.
func checkJitter(v *violations, spec *pb.JobSpec, sched schedule.Schedule) {
	j := spec.GetJitter()
	if j == nil {
		return
	}
	if err := j.CheckValid(); err != nil || j.AsDuration() < 0 {
		v.add("jitter", "must be a duration of at least 0s")
		return
	}
	d := j.AsDuration()
	window := DefaultCatchupWindow
	if w := spec.GetCatchup().GetWindow(); w != nil {
		window = w.AsDuration()
	}
	if d > 0 && d >= window {
		v.add("jitter", fmt.Sprintf("%v must be less than catchup.window (%v): the window counts from the slot's nominal time", d, window))
	}
	if every, ok := schedule.Interval(sched); ok && d >= every {
		v.add("jitter", fmt.Sprintf("%v must be less than the interval of the schedule's @every (%v)", d, every))
	}
}

// ValidateLabels checks labels that are not a job's (a secret's) against
// the rules of a job's labels; it returns nil or a *ValidationError naming
// field.
func ValidateLabels(field string, labels map[string]string) error {
	var v violations
	checkLabels(&v, field, labels)
	if len(v) == 0 {
		return nil
	}
	return &ValidationError{Violations: v}
}

// HandlerRule is the rule of a worker handler's name (worker.handler).
const HandlerRule = "must match " + labelKeyRule

// ValidHandler reports whether name is a worker handler's name, outside a
// job (a worker's poll) as in worker.handler.
func ValidHandler(name string) bool { return validLabelKey(name) }

// ValidateSelector checks a label selector (an ACL token's scope) against
// the rules of labels, so that every selector can match some job; it
// returns nil or a *ValidationError with the field "selector".
func ValidateSelector(selector map[string]string) error {
	var v violations
	checkLabels(&v, "selector", selector)
	if len(v) == 0 {
		return nil
	}
	return &ValidationError{Violations: v}
}
