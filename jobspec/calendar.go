package jobspec

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/raftcron/raftcron/calendar"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// MaxCalendarRefs bounds the calendars one job refers to: each is looked
// up for every slot of the job.
const MaxCalendarRefs = 16

// checkCalendarRefs checks a job's calendars field: names of calendars,
// each once. Whether they exist is the registry's to say.
func checkCalendarRefs(v *violations, refs *pb.CalendarRefs) {
	seen := map[string]bool{}
	n := 0
	for _, list := range []struct {
		field string
		names []string
	}{{"calendars.exclude", refs.GetExclude()}, {"calendars.only", refs.GetOnly()}} {
		for i, name := range list.names {
			field := fmt.Sprintf("%s[%d]", list.field, i)
			n++
			switch {
			case !validName(name):
				v.add(field, "a calendar name "+NameRule)
			case seen[name]:
				v.add(field, "calendar "+quote(name)+" is named twice")
			}
			seen[name] = true
		}
	}
	if n > MaxCalendarRefs {
		v.add("calendars", fmt.Sprintf("at most %d calendars, got %d", MaxCalendarRefs, n))
	}
}

// normalizeCalendarRefs drops a calendars field that names none, so that
// `calendars: {}` is stored, and read back, as no field at all.
func normalizeCalendarRefs(spec *pb.JobSpec) {
	if r := spec.GetCalendars(); r != nil && len(r.GetExclude()) == 0 && len(r.GetOnly()) == 0 {
		spec.Calendars = nil
	}
}

// ValidateCalendar normalizes a calendar spec in place (the zone trimmed,
// days in lower case), checks every rule, and returns the zone's offsets
// from this host's zone database, which the calendar is stored and
// evaluated with (calendar.Offsets). The error is a *ValidationError.
func ValidateCalendar(spec *pb.CalendarSpec) (*pb.ZoneOffsets, error) {
	if spec == nil {
		return nil, &ValidationError{Violations: []Violation{{Field: "spec", Rule: "required"}}}
	}
	spec.Timezone = strings.TrimSpace(spec.Timezone)
	calendar.NormalizeDays(spec)
	var v violations
	checkName(&v, spec.GetName())
	loc := checkTimezone(&v, spec.GetTimezone())
	checkLabels(&v, "labels", spec.GetLabels())
	if n := utf8.RuneCountInString(spec.GetDescription()); n > calendar.MaxNote {
		v.add("description", fmt.Sprintf("must be at most %d characters", calendar.MaxNote))
	}
	zone := calendar.Offsets(loc)
	if _, err := calendar.Compile(spec, zone); err != nil {
		var errs calendar.Errors
		if !errors.As(err, &errs) {
			return nil, err
		}
		for _, fe := range errs {
			v.add(fe.Field, fe.Rule)
		}
	}
	if len(v) > 0 {
		return nil, &ValidationError{Name: spec.GetName(), Violations: v}
	}
	return zone, nil
}

// MaxFreezeNote bounds a freeze's note.
const MaxFreezeNote = 1024

// ValidateFreeze checks a freeze as an operator writes it: a name, a
// window [from, to) that ends after now, a selector of valid labels. The
// error is a *ValidationError.
func ValidateFreeze(fr *pb.Freeze, now time.Time) error {
	if fr == nil {
		return &ValidationError{Violations: []Violation{{Field: "freeze", Rule: "required"}}}
	}
	var v violations
	checkName(&v, fr.GetName())
	from := validTimestamp(&v, "from", fr.GetFrom())
	to := validTimestamp(&v, "to", fr.GetTo())
	switch {
	case fr.GetFrom() == nil:
		v.add("from", "required")
	case fr.GetTo() == nil:
		v.add("to", "required")
	case from && to && !fr.GetTo().AsTime().After(fr.GetFrom().AsTime()):
		v.add("to", fmt.Sprintf("%s must be after from (%s): a freeze is [from, to)",
			fr.GetTo().AsTime().UTC().Format(time.RFC3339), fr.GetFrom().AsTime().UTC().Format(time.RFC3339)))
	case to && !fr.GetTo().AsTime().After(now):
		v.add("to", fmt.Sprintf("%s has passed: the freeze would stop nothing", fr.GetTo().AsTime().UTC().Format(time.RFC3339)))
	}
	checkLabels(&v, "selector", fr.GetSelector())
	if utf8.RuneCountInString(fr.GetNote()) > MaxFreezeNote {
		v.add("note", fmt.Sprintf("must be at most %d characters", MaxFreezeNote))
	}
	if len(v) > 0 {
		return &ValidationError{Name: fr.GetName(), Violations: v}
	}
	return nil
}
