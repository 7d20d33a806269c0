package fsm

import (
	"strconv"

	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Actions of the audit records of calendar and freeze writes.
const (
	AuditCalendarCreate = "calendar_create"
	AuditCalendarUpdate = "calendar_update"
	AuditCalendarDelete = "calendar_delete"
	AuditFreezeCreate   = "freeze_create"
	AuditFreezeDelete   = "freeze_delete"
)

// The audited calendar and freeze handlers record a write in the same
// Apply, as a job's: a calendar's record keeps its specs before and after
// (shared, rendered as a diff on read), a freeze's the freeze.

func auditedPutCalendar(s *state, c *pb.Command, e entry) (outcome, error) {
	before, _ := s.cals.get(c.GetPutCalendar().GetCalendar().GetSpec().GetName())
	o, err := putCalendar(s, c, e)
	if err != nil || !o.changed || !s.audit.on() {
		return o, err
	}
	action := AuditCalendarUpdate
	if o.created {
		action = AuditCalendarCreate
	}
	s.appendEntry(e, &pb.AuditEntry{
		Record: &pb.AuditRecord{
			Action: action, Calendar: o.calendar.GetSpec().GetName(),
			VersionBefore: before.cal.GetVersion(), VersionAfter: o.calendar.GetVersion(),
		},
		CalendarBefore: before.cal.GetSpec(),
		CalendarAfter:  o.calendar.GetSpec(),
	})
	return o, nil
}

func auditedDeleteCalendar(s *state, c *pb.Command, e entry) (outcome, error) {
	before, _ := s.cals.get(c.GetDeleteCalendar().GetName())
	o, err := deleteCalendar(s, c, e)
	if err != nil || !s.audit.on() {
		return o, err
	}
	s.appendEntry(e, &pb.AuditEntry{
		Record: &pb.AuditRecord{
			Action: AuditCalendarDelete, Calendar: before.name, VersionBefore: before.cal.GetVersion(),
		},
		CalendarBefore: before.cal.GetSpec(),
	})
	return o, nil
}

func auditedCreateFreeze(s *state, c *pb.Command, e entry) (outcome, error) {
	o, err := createFreeze(s, c, e)
	if err == nil && s.audit.on() {
		s.appendEntry(e, &pb.AuditEntry{Record: &pb.AuditRecord{Action: AuditFreezeCreate, Freeze: o.freeze.GetName()}, Freeze: o.freeze})
	}
	return o, err
}

func auditedDeleteFreeze(s *state, c *pb.Command, e entry) (outcome, error) {
	o, err := deleteFreeze(s, c, e)
	if err == nil && s.audit.on() {
		s.appendEntry(e, &pb.AuditEntry{Record: &pb.AuditRecord{Action: AuditFreezeDelete, Freeze: o.freeze.GetName()}, Freeze: o.freeze})
	}
	return o, err
}

// calendarChanges renders a calendar record's diff on read: the fields of
// the spec that differ, with the entries as their count (a calendar may
// hold thousands), from nothing for a create and to nothing for a delete.
func calendarChanges(before, after *pb.CalendarSpec) []*pb.AuditChange {
	var d differ
	b, a := withoutEntries(before), withoutEntries(after)
	d.message("", b.ProtoReflect(), a.ProtoReflect())
	if nb, na := len(before.GetEntries()), len(after.GetEntries()); nb != na || !sameEntries(before, after) {
		d.add("entries", entryCount(before), entryCount(after))
	}
	return capChanges(oneSided(d.out, before == nil, after == nil))
}

// oneSided leaves the side of a create (nothing before) or a delete
// (nothing after) empty rather than rendered as zero values.
func oneSided(out []*pb.AuditChange, created, deleted bool) []*pb.AuditChange {
	for _, c := range out {
		if created {
			c.Before = ""
		}
		if deleted {
			c.After = ""
		}
	}
	return out
}

func withoutEntries(spec *pb.CalendarSpec) *pb.CalendarSpec {
	if spec == nil {
		return &pb.CalendarSpec{}
	}
	c := proto.CloneOf(spec)
	c.Entries = nil
	return c
}

func sameEntries(a, b *pb.CalendarSpec) bool {
	return proto.Equal(&pb.CalendarSpec{Entries: a.GetEntries()}, &pb.CalendarSpec{Entries: b.GetEntries()})
}

func entryCount(spec *pb.CalendarSpec) string {
	if spec == nil {
		return ""
	}
	return strconv.Itoa(len(spec.GetEntries())) + " entries"
}

// freezeChanges renders a freeze record: the freeze's fields, set by a
// create or cleared by a delete.
func freezeChanges(action string, fr *pb.Freeze) []*pb.AuditChange {
	var d differ
	none := (&pb.Freeze{}).ProtoReflect()
	deleted := action == AuditFreezeDelete
	if deleted {
		d.message("freeze.", fr.ProtoReflect(), none)
	} else {
		d.message("freeze.", none, fr.ProtoReflect())
	}
	return capChanges(oneSided(d.out, !deleted, deleted))
}

// publicCalendar is a copy of a stored calendar for callers: without the
// zone offsets, with its entry count.
func publicCalendar(cal *pb.Calendar) *pb.Calendar {
	if cal == nil {
		return nil
	}
	c := proto.CloneOf(cal)
	c.Zone = nil
	c.EntryCount = uint32(len(c.GetSpec().GetEntries()))
	return c
}
