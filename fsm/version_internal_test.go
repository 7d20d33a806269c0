package fsm

import "testing"

// A kind added to Command without a version would be proposed to voters
// that cannot apply it; and a kind of a version above CommandVersion would
// be one this build claims not to understand. The newest version is that
// of a kind or of a field a kind gained later.
func TestEveryCommandKindHasAVersion(t *testing.T) {
	fields := kindOneof.Fields()
	highest := uint32(0)
	for i := range fields.Len() {
		v, ok := introducedIn[fields.Get(i).Name()]
		if !ok {
			t.Errorf("command kind %s has no entry in introducedIn", fields.Get(i).Name())
		}
		if v < 1 || v > CommandVersion {
			t.Errorf("command kind %s: version %d, want 1..CommandVersion (%d)", fields.Get(i).Name(), v, CommandVersion)
		}
		highest = max(highest, v)
	}
	for _, f := range laterFields {
		if f.version < 2 || f.version > CommandVersion {
			t.Errorf("a later field of version %d, want 2..CommandVersion (%d)", f.version, CommandVersion)
		}
		highest = max(highest, f.version)
	}
	if len(introducedIn) != fields.Len() {
		t.Errorf("introducedIn lists %d kinds, Command has %d", len(introducedIn), fields.Len())
	}
	if highest != CommandVersion {
		t.Errorf("the newest kind or later field is of version %d but CommandVersion is %d: raise it with the first of a new version", highest, CommandVersion)
	}
}
