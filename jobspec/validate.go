package jobspec

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/raftcron/raftcron/schedule"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Limits on a spec. They keep the replicated state small and bounded.
const (
	MaxScheduleLen  = 256
	MaxHistoryLimit = 1000
	MaxPauseNote    = 1024 // characters
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

const nameRule = "must match [a-z0-9][a-z0-9._-]{0,62}"

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
	if spec == nil {
		return &ValidationError{Violations: []Violation{{Field: "spec", Rule: "required"}}}
	}
	var v violations
	checkName(&v, spec.GetName())
	loc := checkTimezone(&v, spec.GetTimezone())
	checkSchedule(&v, spec.GetSchedule(), loc, now)
	checkTarget(&v, spec)
	checkPolicies(&v, spec)
	checkBounds(&v, spec, now)
	checkMetadata(&v, spec)
	if len(v) == 0 {
		return nil
	}
	return &ValidationError{Name: spec.GetName(), Violations: v}
}

func checkName(v *violations, name string) {
	switch {
	case name == "":
		v.add("name", "required")
	case !nameRE.MatchString(name):
		v.add("name", nameRule)
	}
}

// checkSchedule parses the spec in the job's zone (UTC when the zone
// itself is bad, so syntax errors are still reported).
func checkSchedule(v *violations, spec string, loc *time.Location, now time.Time) {
	spec = strings.TrimSpace(spec)
	switch {
	case spec == "":
		v.add("schedule", "required")
		return
	case len(spec) > MaxScheduleLen:
		v.add("schedule", fmt.Sprintf("must be at most %d bytes", MaxScheduleLen))
		return
	case !utf8.ValidString(spec):
		v.add("schedule", "must be valid UTF-8")
		return
	}
	if err := schedule.Validate(spec, loc, now); err != nil {
		v.add("schedule", err.Error())
	}
}
