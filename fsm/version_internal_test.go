package fsm

import "testing"

// A kind added to Command without a version would be proposed to voters
// that cannot apply it; and a kind of a version above CommandVersion would
// be one this build claims not to understand.
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
	if len(introducedIn) != fields.Len() {
		t.Errorf("introducedIn lists %d kinds, Command has %d", len(introducedIn), fields.Len())
	}
	if highest != CommandVersion {
		t.Errorf("the newest kind is of version %d but CommandVersion is %d: raise it with the first kind of a new version", highest, CommandVersion)
	}
}
