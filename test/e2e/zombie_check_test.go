package e2e

import (
	"slices"
	"testing"
)

func TestCheckSlots(t *testing.T) {
	refused := map[uint64]string{5: "the paused leader's attempt"}
	cases := []struct {
		name string
		rows []SlotRow
		want []string
	}{
		{"clean: the new leader's attempt of the held slot, then newer slots", []SlotRow{
			{1, "s1", 3}, {2, "s2", 4}, {3, "s3", 6}, {4, "s4", 7},
		}, nil},
		{"rows out of ID order are sorted first", []SlotRow{
			{2, "s2", 4}, {1, "s1", 3},
		}, nil},
		{"the zombie applied after the new leader's attempt of its slot", []SlotRow{
			{1, "s1", 3}, {2, "s3", 6}, {3, "s3", 5},
		}, []string{
			"slot s3 applied twice: token 6 (row 2), then token 5 (row 3)",
			"token 5 (slot s3, row 3) applied after token 6 (slot s3, row 2)",
			"token 5 of the paused leader's attempt applied (slot s3, row 3)",
		}},
		{"a stale token of another slot", []SlotRow{
			{1, "s1", 8}, {2, "s2", 4},
		}, []string{"token 4 (slot s2, row 2) applied after token 8 (slot s1, row 1)"}},
		{"a refused token applied in order", []SlotRow{
			{1, "s1", 3}, {2, "s2", 5},
		}, []string{"token 5 of the paused leader's attempt applied (slot s2, row 2)"}},
		{"one token applied twice", []SlotRow{
			{1, "s1", 3}, {2, "s2", 3},
		}, []string{"token 3 (slot s2, row 2) applied after token 3 (slot s1, row 1)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := CheckSlots(c.rows, refused); !slices.Equal(got, c.want) {
				t.Errorf("CheckSlots:\n got %q\nwant %q", got, c.want)
			}
		})
	}
}
