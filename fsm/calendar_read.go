package fsm

import (
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Calendar returns the calendar with that name (without its zone offsets)
// and the jobs that refer to it, by name; ErrNotFound if there is none.
func (f *FSM) Calendar(name string) (*pb.Calendar, []string, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	it, ok := f.st.cals.get(name)
	if !ok {
		return nil, nil, fail(ErrNotFound, "calendar %q not found", name)
	}
	return publicCalendar(it.cal), slices.Sorted(maps.Keys(f.st.cals.users[name])), nil
}

// ListCalendars returns every calendar by name, without entries or zone
// offsets (entry_count says how many entries each has).
func (f *FSM) ListCalendars() []*pb.Calendar {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]*pb.Calendar, 0, f.st.cals.cals.Len())
	f.st.cals.cals.Ascend(func(it calItem) bool {
		c := &pb.Calendar{
			Spec: &pb.CalendarSpec{
				Name: it.cal.GetSpec().GetName(), Timezone: it.cal.GetSpec().GetTimezone(),
				Description: it.cal.GetSpec().GetDescription(), Labels: maps.Clone(it.cal.GetSpec().GetLabels()),
			},
			Version: it.cal.GetVersion(), CreatedAt: proto.CloneOf(it.cal.GetCreatedAt()),
			UpdatedAt: proto.CloneOf(it.cal.GetUpdatedAt()), UpdatedBy: it.cal.GetUpdatedBy(),
			ModifyIndex: it.cal.GetModifyIndex(), EntryCount: uint32(len(it.cal.GetSpec().GetEntries())),
		}
		out = append(out, c)
		return true
	})
	return out
}

// Freezes returns every freeze by name.
func (f *FSM) Freezes() []*pb.Freeze {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]*pb.Freeze, 0, f.st.freezes.freezes.Len())
	f.st.freezes.freezes.Ascend(func(it freezeItem) bool {
		out = append(out, proto.CloneOf(it.freeze))
		return true
	})
	return out
}
