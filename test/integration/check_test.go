package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// checkHistory verifies the fire guarantees on what the sink recorded for
// job, over the slots from..to inclusive, and returns one line per
// violation:
//
//   - G1: no slot was delivered under two run ids (any outcome counts: a
//     refused delivery still shows what was committed);
//   - G4: every slot in the range was applied, exactly once;
//   - G3: applied in slot order, the tokens strictly rise.
func checkHistory(log []delivery, job string, from, to int64) []string {
	var bad []string
	runIDs := map[int64]map[string]bool{}
	appliedAt := map[int64][]delivery{}
	for _, d := range log {
		if d.Job != job {
			continue
		}
		if runIDs[d.Slot] == nil {
			runIDs[d.Slot] = map[string]bool{}
		}
		runIDs[d.Slot][d.RunID] = true
		if d.Outcome == applied {
			appliedAt[d.Slot] = append(appliedAt[d.Slot], d)
		}
	}
	for _, slot := range sortedKeys(runIDs) {
		if ids := runIDs[slot]; len(ids) > 1 {
			bad = append(bad, fmt.Sprintf("G1: slot %d delivered under %d run ids: %s",
				slot, len(ids), strings.Join(sortedKeys(ids), ", ")))
		}
	}
	var lastToken uint64
	var lastSlot int64
	for slot := from; slot <= to; slot++ {
		ds := appliedAt[slot]
		switch {
		case len(ds) == 0:
			bad = append(bad, fmt.Sprintf("G4: slot %d never applied", slot))
			continue
		case len(ds) > 1:
			bad = append(bad, fmt.Sprintf("slot %d applied %d times (tokens %v)", slot, len(ds), tokens(ds)))
		}
		if tok := ds[0].Token; tok <= lastToken {
			bad = append(bad, fmt.Sprintf("G3: slot %d applied with token %d, not above slot %d's token %d",
				slot, tok, lastSlot, lastToken))
		} else {
			lastToken, lastSlot = tok, slot
		}
	}
	return bad
}

func tokens(ds []delivery) []uint64 {
	out := make([]uint64, len(ds))
	for i, d := range ds {
		out[i] = d.Token
	}
	return out
}

func sortedKeys[K int64 | string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// The checker must catch each kind of violation, or the scenario tests
// could pass on a broken build.
func TestCheckHistoryCatchesViolations(t *testing.T) {
	ok := func(slot int64, token uint64) delivery {
		return delivery{Job: "j", RunID: fmt.Sprintf("j-%d", token), Slot: slot, Token: token, Attempt: 1, Outcome: applied}
	}
	clean := []delivery{ok(10, 1), ok(11, 2), ok(12, 5)}
	// A redispatch of slot 11 (same run, newer token) acknowledged as a
	// duplicate, and the old leader's late attempt refused: both fine.
	redelivered := append(slices.Clone(clean),
		delivery{Job: "j", RunID: "j-2", Slot: 11, Token: 3, Attempt: 2, Outcome: duplicate},
		delivery{Job: "j", RunID: "j-2", Slot: 11, Token: 2, Attempt: 1, Outcome: stale},
		delivery{Job: "other", RunID: "other-4", Slot: 11, Token: 4, Outcome: applied})
	cases := []struct {
		name string
		log  []delivery
		want string // substring of the one expected violation; "" = none
	}{
		{"clean", clean, ""},
		{"redelivered and fenced", redelivered, ""},
		{"two run ids for a slot", append(slices.Clone(clean),
			delivery{Job: "j", RunID: "j-9", Slot: 11, Token: 9, Outcome: duplicate}), "G1: slot 11"},
		{"missing slot", []delivery{ok(10, 1), ok(12, 5)}, "G4: slot 11 never applied"},
		{"applied twice (no dedupe)", append(slices.Clone(clean),
			delivery{Job: "j", RunID: "j-2", Slot: 11, Token: 3, Attempt: 2, Outcome: applied}), "slot 11 applied 2 times"},
		{"tokens not rising", []delivery{ok(10, 1), ok(11, 5), ok(12, 4)}, "G3: slot 12"},
		{"refused is not applied", []delivery{ok(10, 1),
			{Job: "j", RunID: "j-2", Slot: 11, Token: 2, Outcome: stale}, ok(12, 5)}, "G4: slot 11"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bad := checkHistory(tc.log, "j", 10, 12)
			switch {
			case tc.want == "" && len(bad) > 0:
				t.Fatalf("violations on a valid history: %q", bad)
			case tc.want != "" && (len(bad) != 1 || !strings.Contains(bad[0], tc.want)):
				t.Fatalf("violations %q, want exactly one containing %q", bad, tc.want)
			}
		})
	}
}
