package fsm

// A tombstone keeps a deleted name's last generation while runs of the
// name are still open; once none is, it is collected and its generation
// folds into state.retired, one number for every deleted name. A job
// created under a name without a tombstone starts above retired, so slot
// identities (name, generation, slot) never repeat across delete and
// re-create (G1), and the registry's memory does not grow with the names
// ever deleted.

// collectTombstone removes name's tombstone if no run of the name is open.
func (s *state) collectTombstone(name string) {
	t, ok := s.tombstones.Get(tombstone{name: name})
	if !ok || s.hasOpenRun(name) {
		return
	}
	s.tombstones.Delete(t)
	s.retired = max(s.retired, t.generation)
	s.tx.touch()
}

// hasOpenRun reports whether a run of name is DISPATCHED or RETRYING.
func (s *state) hasOpenRun(name string) bool {
	open := false
	s.ix.open.AscendGreaterOrEqual(openKey{job: name, slot: minInt64}, func(k openKey) bool {
		open = k.job == name
		return false
	})
	return open
}
