package fsm

import (
	"bufio"
	"fmt"
	"hash"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Calendars are snapshotted with the registry, after the runs
// (header.calendar_count records in name order, each with its zone
// offsets): a user restore takes them from its file with the jobs that
// refer to them. Freezes come last, after the audit records
// (header.freeze_count, in name order): live state a user restore keeps.
// A state without either writes none and reads as the snapshots written
// before they existed; a build from before them refuses a snapshot with
// them (a record of another kind where it expects a token, or data after
// the last record), which it could not honour.

func (c *calendarState) writeTo(put func(proto.Message) error) error {
	var err error
	c.cals.Ascend(func(it calItem) bool {
		if err = put(&pb.SnapshotRecord{Record: &pb.SnapshotRecord_Calendar{Calendar: it.cal}}); err != nil {
			err = fmt.Errorf("calendar %q: %w", it.name, err)
		}
		return err == nil
	})
	return err
}

func (f *freezeState) writeTo(put func(proto.Message) error) error {
	var err error
	f.freezes.Ascend(func(it freezeItem) bool {
		if err = put(&pb.SnapshotRecord{Record: &pb.SnapshotRecord_Freeze{Freeze: it.freeze}}); err != nil {
			err = fmt.Errorf("freeze %q: %w", it.name, err)
		}
		return err == nil
	})
	return err
}

// readCalendars reads count calendar records, compiling each as a put
// would, in strictly increasing name order.
func (c *calendarState) readCalendars(r *bufio.Reader, dec protodelim.UnmarshalOptions, count uint64) error {
	prev := ""
	for i := uint64(0); i < count; i++ {
		var rec pb.SnapshotRecord
		if err := dec.UnmarshalFrom(r, &rec); err != nil {
			return fmt.Errorf("calendar record %d of %d: %w", i+1, count, truncated(err))
		}
		cal := rec.GetCalendar()
		if cal == nil {
			return fmt.Errorf("record %d of %d calendars is not a calendar", i+1, count)
		}
		set, err := compileCalendar("calendar", cal)
		if err != nil {
			return fmt.Errorf("calendar record %d of %d: %w", i+1, count, err)
		}
		name := cal.GetSpec().GetName()
		if i > 0 && name <= prev {
			return fmt.Errorf("calendar %q follows %q: calendars must be in strictly increasing name order", name, prev)
		}
		prev = name
		c.cals.ReplaceOrInsert(calItem{name: name, cal: cal, set: set})
	}
	return nil
}

// readFreezes reads count freeze records in strictly increasing name
// order.
func (f *freezeState) readFreezes(r *bufio.Reader, dec protodelim.UnmarshalOptions, count uint64) error {
	prev := ""
	for i := uint64(0); i < count; i++ {
		var rec pb.SnapshotRecord
		if err := dec.UnmarshalFrom(r, &rec); err != nil {
			return fmt.Errorf("freeze record %d of %d: %w", i+1, count, truncated(err))
		}
		fr := rec.GetFreeze()
		if err := checkFreeze("freeze", fr); err != nil {
			return fmt.Errorf("freeze record %d of %d: %w", i+1, count, err)
		}
		if i > 0 && fr.GetName() <= prev {
			return fmt.Errorf("freeze %q follows %q: freezes must be in strictly increasing name order", fr.GetName(), prev)
		}
		prev = fr.GetName()
		f.freezes.ReplaceOrInsert(newFreezeItem(fr))
	}
	return nil
}

// hash adds the calendars and the freezes to a state hash; a state with
// neither adds nothing, so it hashes as before they existed.
func (s *state) hashCalendars(h hash.Hash, m *marshaler) {
	if s.cals.cals.Len() == 0 && s.freezes.freezes.Len() == 0 {
		return
	}
	writeUint(h, uint64(s.cals.cals.Len()))
	s.cals.cals.Ascend(func(it calItem) bool {
		m.write(it.cal, "calendar", it.name)
		return true
	})
	writeUint(h, uint64(s.freezes.freezes.Len()))
	s.freezes.freezes.Ascend(func(it freezeItem) bool {
		m.write(it.freeze, "freeze", it.name)
		return true
	})
}
