package ledger_test

import (
	"reflect"
	"testing"

	"github.com/raftcron/raftcron/ledger"
)

func TestDecisionsKeepsTheNewestFirst(t *testing.T) {
	t.Parallel()
	cases := []struct {
		capacity, added int
		want            []uint64 // seqs listed
	}{
		{capacity: 3, added: 0, want: []uint64{}},
		{capacity: 3, added: 2, want: []uint64{2, 1}},
		{capacity: 3, added: 3, want: []uint64{3, 2, 1}},
		{capacity: 3, added: 7, want: []uint64{7, 6, 5}},
		{capacity: 0, added: 2, want: []uint64{2}},
	}
	for _, c := range cases {
		l := ledger.NewDecisions(c.capacity)
		for i := 1; i <= c.added; i++ {
			l.Add(ledger.Decision{Outcome: ledger.OutcomeApplied, Seq: uint64(i)})
		}
		got := []uint64{}
		for _, d := range l.List() {
			got = append(got, d.Seq)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("capacity %d, %d added: listed %v, want %v", c.capacity, c.added, got, c.want)
		}
	}
}
