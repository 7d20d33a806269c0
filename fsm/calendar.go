package fsm

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/btree"
	"google.golang.org/protobuf/proto"

	"github.com/raftcron/raftcron/calendar"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// MaxCalendars bounds the calendars a cluster keeps: each is compiled on
// every node, and a fire of a job consults its own.
const MaxCalendars = 1000

// calendarState holds the calendars by name, each with its compiled set,
// and which jobs refer to each (derived: rebuilt by Restore from the
// jobs). Calendars belong with the registry: jobs refer to them, so a
// user restore takes them from its file with the jobs (userrestore.go).
type calendarState struct {
	cals *btree.BTreeG[calItem]
	// users: calendar name → the jobs whose calendars name it.
	users map[string]map[string]struct{}
}

// calItem is one calendar; cal is immutable once stored, set is compiled
// from it and shared by every reader.
type calItem struct {
	name string
	cal  *pb.Calendar
	set  *calendar.Set
}

func calLess(a, b calItem) bool { return a.name < b.name }

func newCalendarState() calendarState {
	return calendarState{cals: btree.NewG(treeDegree, calLess), users: map[string]map[string]struct{}{}}
}

// capture is a copy for a snapshot, without the derived index.
func (c *calendarState) capture() calendarState {
	return calendarState{cals: c.cals.Clone()}
}

func (c *calendarState) get(name string) (calItem, bool) {
	return c.cals.Get(calItem{name: name})
}

// compileCalendar checks a calendar as stored and compiles it; field
// names the command's field in messages.
func compileCalendar(field string, cal *pb.Calendar) (*calendar.Set, error) {
	spec := cal.GetSpec()
	if spec.GetName() == "" {
		return nil, malformed("%s.spec.name must not be empty", field)
	}
	set, err := calendar.Compile(spec, cal.GetZone())
	if err != nil {
		return nil, fail(ErrInvalid, "calendar %q: %v", spec.GetName(), err)
	}
	return set, nil
}

// putCalendar creates a calendar or replaces its spec (and zone). An equal
// spec and zone change nothing; a changed calendar applies to every slot
// decided from this entry on.
func putCalendar(s *state, c *pb.Command, e entry) (outcome, error) {
	p := c.GetPutCalendar()
	in := p.GetCalendar()
	set, err := compileCalendar("put_calendar.calendar", in)
	if err != nil {
		return outcome{}, err
	}
	name := in.GetSpec().GetName()
	old, exists := s.cals.get(name)
	if v := p.GetExpectedVersion(); v != 0 && v != old.cal.GetVersion() {
		return outcome{}, fail(ErrVersionMismatch, "calendar %q is at version %d, not %d", name, old.cal.GetVersion(), v)
	}
	if exists && proto.Equal(old.cal.GetSpec(), in.GetSpec()) && proto.Equal(old.cal.GetZone(), in.GetZone()) {
		return outcome{calendar: old.cal}, nil
	}
	if !exists && s.cals.cals.Len() >= MaxCalendars {
		return outcome{}, fail(ErrLimitExceeded, "calendar %q not created: the cluster holds %d calendars, the most it keeps", name, MaxCalendars)
	}
	now := e.timestamp()
	stored := &pb.Calendar{
		Spec: in.GetSpec(), Zone: in.GetZone(), Version: 1,
		CreatedAt: now, UpdatedAt: now, UpdatedBy: e.principal, ModifyIndex: e.index,
	}
	if exists {
		stored.Version = old.cal.GetVersion() + 1
		stored.CreatedAt = old.cal.GetCreatedAt()
	}
	s.cals.cals.ReplaceOrInsert(calItem{name: name, cal: stored, set: set})
	s.tx.touch()
	return outcome{calendar: stored, changed: true, created: !exists}, nil
}

// deleteCalendar deletes a calendar no job refers to.
func deleteCalendar(s *state, c *pb.Command, _ entry) (outcome, error) {
	name := c.GetDeleteCalendar().GetName()
	if name == "" {
		return outcome{}, malformed("delete_calendar.name must not be empty")
	}
	if _, ok := s.cals.get(name); !ok {
		return outcome{}, fail(ErrNotFound, "calendar %q not found", name)
	}
	if users := s.cals.users[name]; len(users) > 0 {
		return outcome{}, fail(ErrInUse, "calendar %q is in use by %s: take it out of their calendars first",
			name, listNames("job", slices.Sorted(maps.Keys(users))))
	}
	s.cals.cals.Delete(calItem{name: name})
	s.tx.touch()
	return outcome{changed: true}, nil
}

// listNames is "job a", "jobs a, b and c", or the first ten and how many
// more.
func listNames(noun string, names []string) string {
	const most = 10
	if len(names) == 1 {
		return fmt.Sprintf("%s %q", noun, names[0])
	}
	quoted := make([]string, 0, min(len(names), most))
	for _, n := range names[:min(len(names), most)] {
		quoted = append(quoted, fmt.Sprintf("%q", n))
	}
	if more := len(names) - len(quoted); more > 0 {
		return fmt.Sprintf("%ss %s and %d more", noun, strings.Join(quoted, ", "), more)
	}
	return fmt.Sprintf("%ss %s and %s", noun, strings.Join(quoted[:len(quoted)-1], ", "), quoted[len(quoted)-1])
}

// checkRefs refuses a job spec that names a calendar the state does not
// hold, or, for a caller with a selector, one outside its scope (which
// reads as missing).
func (c *calendarState) checkRefs(refs *pb.CalendarRefs, sel map[string]string) error {
	for _, list := range []struct {
		field string
		names []string
	}{{"calendars.exclude", refs.GetExclude()}, {"calendars.only", refs.GetOnly()}} {
		for i, name := range list.names {
			it, ok := c.get(name)
			if !ok || !SelectorMatches(it.cal.GetSpec().GetLabels(), sel) {
				return fail(ErrInvalid, "%s[%d]: calendar %q not found", list.field, i, name)
			}
		}
	}
	return nil
}

// refer records that job's calendars changed from before to after.
func (c *calendarState) refer(job string, before, after *pb.CalendarRefs) {
	if before == nil && after == nil {
		return
	}
	for _, name := range refNames(before) {
		if u := c.users[name]; u != nil {
			delete(u, job)
			if len(u) == 0 {
				delete(c.users, name)
			}
		}
	}
	for _, name := range refNames(after) {
		u := c.users[name]
		if u == nil {
			u = map[string]struct{}{}
			c.users[name] = u
		}
		u[job] = struct{}{}
	}
}

func refNames(r *pb.CalendarRefs) []string {
	if r == nil {
		return nil
	}
	return append(slices.Clip(r.GetExclude()), r.GetOnly()...)
}

// rebuildUsers derives users from the jobs, for Restore.
func (s *state) rebuildUsers() {
	s.cals.users = map[string]map[string]struct{}{}
	s.jobs.Ascend(func(it jobItem) bool {
		s.cals.refer(it.name, nil, it.job.GetSpec().GetCalendars())
		return true
	})
}

// scopedCalendar wraps a calendar write so that a caller with a selector
// touches only calendars whose labels include it: one outside reads as
// taken (put) or missing (delete).
func scopedCalendar(h handler) handler {
	return func(s *state, c *pb.Command, e entry) (outcome, error) {
		sel := c.GetCaller().GetSelector()
		if len(sel) == 0 {
			return h(s, c, e)
		}
		var name string
		switch k := c.GetKind().(type) {
		case *pb.Command_PutCalendar:
			spec := k.PutCalendar.GetCalendar().GetSpec()
			name = spec.GetName()
			if !SelectorMatches(spec.GetLabels(), sel) {
				return outcome{}, fail(ErrInvalid, "labels: calendar %q must carry every label of the caller's selector", name)
			}
			if it, ok := s.cals.get(name); ok && !SelectorMatches(it.cal.GetSpec().GetLabels(), sel) {
				return outcome{}, fail(ErrAlreadyExists, "calendar %q already exists", name)
			}
		case *pb.Command_DeleteCalendar:
			name = k.DeleteCalendar.GetName()
			if it, ok := s.cals.get(name); ok && !SelectorMatches(it.cal.GetSpec().GetLabels(), sel) {
				return outcome{}, fail(ErrNotFound, "calendar %q not found", name)
			}
		}
		return h(s, c, e)
	}
}
