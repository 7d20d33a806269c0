package fsm

import (
	"maps"
	"slices"

	"github.com/google/btree"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// MaxFreezes bounds the freezes a cluster keeps: a fire consults every
// freeze in force.
const MaxFreezes = 1000

// freezeState holds the freezes by name. A freeze is a decision about the
// present, not part of the registry: a user restore keeps the live ones
// (userrestore.go), so restoring a backup neither lifts a freeze in force
// nor brings back one lifted since.
type freezeState struct {
	freezes *btree.BTreeG[freezeItem]
	// held: the jobs holding a slot a deferring freeze kept back
	// (status.deferred_slot_unix), derived, so that a freeze change
	// re-plans them (their release may be due).
	held map[string]struct{}
}

// freezeItem is one freeze, immutable once stored; from and to are its
// window in Unix seconds, [from, to) for slots.
type freezeItem struct {
	name     string
	freeze   *pb.Freeze
	from, to int64
}

func freezeLess(a, b freezeItem) bool { return a.name < b.name }

func newFreezeState() freezeState {
	return freezeState{freezes: btree.NewG(treeDegree, freezeLess), held: map[string]struct{}{}}
}

func (f *freezeState) capture() freezeState {
	return freezeState{freezes: f.freezes.Clone()}
}

// newFreezeItem indexes a stored freeze. A to with a fraction of a second
// keeps the slot of that second in the window, as [from, to) keeps it.
func newFreezeItem(fr *pb.Freeze) freezeItem {
	it := freezeItem{name: fr.GetName(), freeze: fr, from: fr.GetFrom().GetSeconds(), to: fr.GetTo().GetSeconds()}
	if fr.GetFrom().GetNanos() > 0 {
		it.from++
	}
	if fr.GetTo().GetNanos() > 0 {
		it.to++
	}
	return it
}

// checkFreeze checks what the FSM needs of a freeze to store it.
func checkFreeze(field string, fr *pb.Freeze) error {
	switch {
	case fr == nil:
		return malformed("%s is required", field)
	case fr.GetName() == "":
		return malformed("%s.name must not be empty", field)
	case fr.GetFrom() == nil || fr.GetTo() == nil || fr.GetFrom().CheckValid() != nil || fr.GetTo().CheckValid() != nil:
		return malformed("%s: from and to must be valid times", field)
	case !fr.GetTo().AsTime().After(fr.GetFrom().AsTime()):
		return fail(ErrInvalid, "freeze %q: to must be after from", fr.GetName())
	}
	return nil
}

// createFreeze stores a new freeze; its name must be free.
func createFreeze(s *state, c *pb.Command, e entry) (outcome, error) {
	in := c.GetCreateFreeze().GetFreeze()
	if err := checkFreeze("create_freeze.freeze", in); err != nil {
		return outcome{}, err
	}
	if _, ok := s.freezes.freezes.Get(freezeItem{name: in.GetName()}); ok {
		return outcome{}, fail(ErrAlreadyExists, "freeze %q already exists", in.GetName())
	}
	if s.freezes.freezes.Len() >= MaxFreezes {
		return outcome{}, fail(ErrLimitExceeded, "freeze %q not created: the cluster holds %d freezes, the most it keeps", in.GetName(), MaxFreezes)
	}
	in.CreatedAt = e.timestamp()
	in.CreatedBy = e.principal
	s.freezes.freezes.ReplaceOrInsert(newFreezeItem(in))
	s.freezes.touchHeld(s)
	return outcome{freeze: in, changed: true, created: true}, nil
}

// deleteFreeze deletes a freeze, lifting it: a slot it held back may now
// fire (its job is re-planned).
func deleteFreeze(s *state, c *pb.Command, _ entry) (outcome, error) {
	name := c.GetDeleteFreeze().GetName()
	if name == "" {
		return outcome{}, malformed("delete_freeze.name must not be empty")
	}
	it, ok := s.freezes.freezes.Get(freezeItem{name: name})
	if !ok {
		return outcome{}, fail(ErrNotFound, "freeze %q not found", name)
	}
	s.freezes.freezes.Delete(it)
	s.freezes.touchHeld(s)
	return outcome{freeze: it.freeze, changed: true}, nil
}

// touchHeld marks every job holding a deferred slot changed.
func (f *freezeState) touchHeld(s *state) {
	s.tx.touch()
	for _, name := range slices.Sorted(maps.Keys(f.held)) {
		s.tx.jobChanged(name)
	}
}

// hold notes whether job holds a deferred slot in its status st.
func (f *freezeState) hold(job string, st *pb.JobStatus) {
	if st.GetDeferredSlotUnix() != 0 {
		f.held[job] = struct{}{}
	} else {
		delete(f.held, job)
	}
}

// rebuildHeld derives held from the statuses, for Restore.
func (s *state) rebuildHeld() {
	s.freezes.held = map[string]struct{}{}
	s.jobs.Ascend(func(it jobItem) bool {
		s.freezes.hold(it.name, it.status)
		return true
	})
}

// freezeOwned reports whether a caller with selector sel may change the
// freeze: its selector must include sel, so that it matches only jobs the
// caller sees.
func freezeOwned(fr *pb.Freeze, sel map[string]string) bool {
	return SelectorMatches(fr.GetSelector(), sel)
}

// FreezeVisible reports whether a caller with selector sel may see the
// freeze: it can match a job the caller sees (no label of both selectors
// differs).
func FreezeVisible(fr *pb.Freeze, sel map[string]string) bool {
	for k, v := range sel {
		if w, ok := fr.GetSelector()[k]; ok && w != v {
			return false
		}
	}
	return true
}

// scopedFreeze wraps a freeze write so that a caller with a selector
// creates only freezes whose selector includes its own, and deletes only
// those; another reads as missing.
func scopedFreeze(h handler) handler {
	return func(s *state, c *pb.Command, e entry) (outcome, error) {
		sel := c.GetCaller().GetSelector()
		if len(sel) == 0 {
			return h(s, c, e)
		}
		switch k := c.GetKind().(type) {
		case *pb.Command_CreateFreeze:
			if fr := k.CreateFreeze.GetFreeze(); !freezeOwned(fr, sel) {
				return outcome{}, fail(ErrInvalid, "selector: freeze %q must carry every label of the caller's selector", fr.GetName())
			}
		case *pb.Command_DeleteFreeze:
			name := k.DeleteFreeze.GetName()
			if it, ok := s.freezes.freezes.Get(freezeItem{name: name}); ok && !freezeOwned(it.freeze, sel) {
				return outcome{}, fail(ErrNotFound, "freeze %q not found", name)
			}
		}
		return h(s, c, e)
	}
}
