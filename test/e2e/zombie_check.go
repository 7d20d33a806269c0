package e2e

import (
	"fmt"
	"sort"
)

// SlotRow is one row of the zombie scenarios' business table: a slot the receiver
// applied and the token of the attempt that applied it. ID is the row's serial, so rows
// sorted by ID are in the order they were written.
type SlotRow struct {
	ID    int64
	Slot  string
	Token uint64
}

// CheckSlots is the zombie scenarios' checker, on the business table: no slot applied
// twice, no token applied after a higher one (the fence is per job, and every slot is
// one run of the job), and none of the tokens refused names (what the scenario saw
// refused: the paused leader's attempt, the forgery) applied at all. It returns one line
// per violation.
func CheckSlots(rows []SlotRow, refused map[uint64]string) []string {
	rows = append([]SlotRow(nil), rows...)
	sort.Slice(rows, func(i, j int) bool { return rows[i].ID < rows[j].ID })
	var out []string
	first := map[string]SlotRow{}
	var highest SlotRow
	for i, r := range rows {
		if prev, ok := first[r.Slot]; ok {
			out = append(out, fmt.Sprintf("slot %s applied twice: token %d (row %d), then token %d (row %d)",
				r.Slot, prev.Token, prev.ID, r.Token, r.ID))
		} else {
			first[r.Slot] = r
		}
		if i > 0 && r.Token <= highest.Token {
			out = append(out, fmt.Sprintf("token %d (slot %s, row %d) applied after token %d (slot %s, row %d)",
				r.Token, r.Slot, r.ID, highest.Token, highest.Slot, highest.ID))
		}
		if what, ok := refused[r.Token]; ok {
			out = append(out, fmt.Sprintf("token %d of %s applied (slot %s, row %d)", r.Token, what, r.Slot, r.ID))
		}
		if r.Token > highest.Token {
			highest = r
		}
	}
	return out
}
