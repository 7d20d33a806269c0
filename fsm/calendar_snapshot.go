package fsm

import (
	"bufio"
	"errors"
	"fmt"
	"hash"

	"github.com/google/btree"
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
	return writeSorted(c.cals, put, func(it calItem) (*pb.SnapshotRecord, string) {
		return &pb.SnapshotRecord{Record: &pb.SnapshotRecord_Calendar{Calendar: it.cal}}, "calendar " + it.name
	})
}

func (f *freezeState) writeTo(put func(proto.Message) error) error {
	return writeSorted(f.freezes, put, func(it freezeItem) (*pb.SnapshotRecord, string) {
		return &pb.SnapshotRecord{Record: &pb.SnapshotRecord_Freeze{Freeze: it.freeze}}, "freeze " + it.name
	})
}

// readCalendars reads count calendar records, compiling each as a put
// would, in strictly increasing name order.
func (c *calendarState) readCalendars(r *bufio.Reader, dec protodelim.UnmarshalOptions, count uint64) error {
	return readSorted(r, dec, "calendar", count, func(rec *pb.SnapshotRecord) (string, error) {
		cal := rec.GetCalendar()
		if cal == nil {
			return "", errors.New("not a calendar")
		}
		set, err := compileCalendar("calendar", cal)
		if err != nil {
			return "", err
		}
		name := cal.GetSpec().GetName()
		c.cals.ReplaceOrInsert(calItem{name: name, cal: cal, set: set})
		return name, nil
	})
}

// readFreezes reads count freeze records in strictly increasing name
// order.
func (f *freezeState) readFreezes(r *bufio.Reader, dec protodelim.UnmarshalOptions, count uint64) error {
	return readSorted(r, dec, "freeze", count, func(rec *pb.SnapshotRecord) (string, error) {
		fr := rec.GetFreeze()
		if err := checkFreeze("freeze", fr); err != nil {
			return "", err
		}
		f.freezes.ReplaceOrInsert(newFreezeItem(fr))
		return fr.GetName(), nil
	})
}

// writeSorted writes a record for each item of t, in the tree's order;
// rec names the item for errors.
func writeSorted[T any](t *btree.BTreeG[T], put func(proto.Message) error, rec func(T) (*pb.SnapshotRecord, string)) error {
	var err error
	t.Ascend(func(it T) bool {
		r, name := rec(it)
		if err = put(r); err != nil {
			err = fmt.Errorf("%s: %w", name, err)
		}
		return err == nil
	})
	return err
}

// readSorted reads count records of one kind (noun), each taken by take,
// which returns its name; the names must strictly increase.
func readSorted(r *bufio.Reader, dec protodelim.UnmarshalOptions, noun string, count uint64, take func(*pb.SnapshotRecord) (string, error)) error {
	prev := ""
	for i := uint64(0); i < count; i++ {
		var rec pb.SnapshotRecord
		if err := dec.UnmarshalFrom(r, &rec); err != nil {
			return fmt.Errorf("%s record %d of %d: %w", noun, i+1, count, truncated(err))
		}
		name, err := take(&rec)
		if err != nil {
			return fmt.Errorf("%s record %d of %d: %w", noun, i+1, count, err)
		}
		if i > 0 && name <= prev {
			return fmt.Errorf("%s %q follows %q: %ss must be in strictly increasing name order", noun, name, prev, noun)
		}
		prev = name
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
